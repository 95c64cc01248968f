// Long work on the page in slices of a few milliseconds with the page free in between (input,
// frames, a streaming answer), so that no task holds it for long: drawing the older messages
// of a conversation above the newest ones, which are drawn first.

const SLICE_MS = 8; // a slice takes no new item once it has run this long
const PAINT_WAIT_MS = 100; // (a hidden page has no frames: go on without)

/** Let the page run what waits (input, a frame, socket events), then go on. */
export function yieldToPage() {
  if (globalThis.scheduler?.yield) return globalThis.scheduler.yield();
  return new Promise((resolve) => {
    const channel = new MessageChannel(); // not setTimeout: no 4 ms clamp once nested
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(null);
  });
}

/** Once the next frame is painted. Yielding alone lets slices run back to back ahead of the
 * browser's frames (it painted once in ~130 ms meanwhile): a slice per frame keeps it painting. */
function afterPaint() {
  return new Promise((resolve) => {
    requestAnimationFrame(() => setTimeout(resolve, 0));
    setTimeout(resolve, PAINT_WAIT_MS);
  });
}

/** Run `step(until)` once per slice, the page free in between, until it returns true (all done:
 * resolves true) or `live()` turns false (stopped: resolves false). `until` is the
 * `performance.now()` past which the step should take no new item. */
export async function inSlices(step, live) {
  for (;;) {
    await afterPaint();
    await yieldToPage();
    if (!live()) return false;
    if (step(performance.now() + SLICE_MS)) return true;
  }
}
