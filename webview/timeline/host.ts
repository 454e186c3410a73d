import { isViewState, type TimelineViewState, type WebviewMessage } from '../../src/protocol/timeline';

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: TimelineViewState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** The extension's side of the page: messages to it, and the view state VS Code keeps across hide/show. */
export class Host {
  private readonly api = acquireVsCodeApi();
  private saveTimer: ReturnType<typeof setTimeout> | undefined;

  /** `view` is read when the state is saved, which may be a little after it was asked for. */
  constructor(private readonly view: () => TimelineViewState) {}

  savedView(): TimelineViewState {
    const saved = this.api.getState();
    return isViewState(saved) ? saved : { filter: '', windowMs: 5 * 60_000, paused: false, scrollTop: 0 };
  }

  post(message: WebviewMessage): void {
    this.api.postMessage(message);
  }

  saveState(): void {
    clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    this.api.setState(this.view());
  }

  saveStateSoon(): void {
    this.saveTimer ??= setTimeout(() => this.saveState(), 200);
  }
}
