import { isHostMessage, type HostMessage } from '../../src/protocol/timeline';
import type { Controls } from './controls';
import type { PastSection } from './past';
import type { TimelineState } from './state';

/** The host's messages (typed by the protocol; anything else is ignored), applied to the page. */
export function listenToHost(state: TimelineState, controls: Controls, past: PastSection, requestDraw: () => void): void {
  window.addEventListener('message', (event: MessageEvent<unknown>) => {
    const message = event.data;
    if (!isHostMessage(message)) return;
    receive(message);
  });

  function receive(message: HostMessage): void {
    switch (message.type) {
      case 'init':
        state.clockOffset = message.sentAt - Date.now();
        state.config = message.config;
        state.strings = message.strings;
        state.store.reset(message.rows);
        controls.applyStrings();
        if (message.filter !== undefined) controls.setFilter(message.filter);
        state.frozenAt = state.view.paused ? state.hostNow(true) : undefined;
        break;
      case 'diff':
        if (state.view.paused || !state.strings) return; // paused: the picture is frozen; resuming asks for a fresh one
        // The smallest delay seen is the best estimate of the clock difference.
        state.clockOffset = Math.max(state.clockOffset, message.sentAt - Date.now());
        state.store.apply(message);
        break;
      case 'config':
        state.config = message.config;
        controls.applyStrings();
        break;
      case 'filter':
        controls.setFilter(message.filter);
        break;
      case 'past':
        if (state.strings) past.show(message, state.strings);
        break;
    }
    requestDraw();
  }
}
