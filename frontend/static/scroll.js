// Keep the conversation scrolled to the newest content unless the user has
// scrolled up to read; then offer a "Newest" button instead.

const NEAR_BOTTOM_PX = 48;

export class Scroller {
  constructor(container, jumpButton) {
    this.container = container;
    this.jump = jumpButton;
    this.stuck = true;
    this.frame = 0;
    this.lastTop = 0;
    container.addEventListener("scroll", () => {
      const { scrollTop, scrollHeight, clientHeight } = container;
      // Text keeps arriving while we scroll, so "not at the bottom" alone
      // does not mean the reader left: only moving up does.
      if (scrollHeight - scrollTop - clientHeight <= NEAR_BOTTOM_PX) this.stuck = true;
      else if (scrollTop < this.lastTop) this.stuck = false;
      this.lastTop = scrollTop;
      if (this.stuck) this.jump.hidden = true;
    }, { passive: true });
    jumpButton.addEventListener("click", () => this.toBottom(true));
  }

  /** Call after content changed. */
  changed() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (this.stuck) this.container.scrollTop = this.container.scrollHeight;
      else this.jump.hidden = false;
    });
  }

  /** Content was drawn above what the reader sees: keep them `fromBottom` px above the end, as they were. */
  hold(fromBottom) {
    const { container } = this;
    this.stuck = container.scrollHeight - fromBottom - container.clientHeight <= NEAR_BOTTOM_PX;
    container.scrollTop = container.scrollHeight - fromBottom;
    this.lastTop = container.scrollTop;
    this.jump.hidden = this.stuck;
  }

  toBottom(focus = false) {
    this.stuck = true;
    this.jump.hidden = true;
    this.container.scrollTop = this.container.scrollHeight;
    if (focus) this.container.focus({ preventScroll: true });
  }
}
