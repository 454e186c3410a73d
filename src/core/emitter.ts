/** VS Code's event shape without importing vscode: `onDidX(listener)` returns a disposable. */
export interface Disposable {
  dispose(): void;
}

export type Event<T> = (listener: (value: T) => void) => Disposable;

/**
 * A listener that throws must not break the code that fired the event (a watch loop, a timer): like VS Code's own
 * Emitter, each listener's error is reported and the other listeners still run.
 */
function reportListenerError(error: unknown): void {
  try {
    console.error('LockLens: an event listener failed:', error);
  } catch {
    // nowhere left to report it
  }
}

export class Emitter<T> {
  private readonly listeners = new Set<(value: T) => void>();

  readonly event: Event<T> = (listener) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };

  fire(value: T): void {
    for (const l of [...this.listeners]) {
      try {
        l(value);
      } catch (e) {
        reportListenerError(e);
      }
    }
  }

  dispose(): void {
    this.listeners.clear();
  }
}
