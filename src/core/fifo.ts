/**
 * A first-in first-out queue whose shift does not move what is left: Array.prototype.shift copies the remaining
 * elements of a long array, so draining a queue of n costs n²/2 moves (seconds for a ZooKeeper session's 100,000
 * queued requests). Read from a moving head; the array is cut once the head has passed half of it.
 */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
