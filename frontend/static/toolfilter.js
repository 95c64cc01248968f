// The tools panel's filter: shows only the tools whose name, title or
// description hold every word typed, opens the servers that have some (and
// closes them again when the filter is cleared), and hides the others.

const plural = (n) => `${n} tool${n === 1 ? "" : "s"}`;

export class ToolFilter {
  constructor({ input, box, note }) {
    Object.assign(this, { input, box, note });
    input.addEventListener("input", () => this.apply());
    input.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && input.value) {
        e.stopPropagation();
        input.value = "";
        this.apply();
      }
    });
  }

  get words() {
    return this.input.value.toLowerCase().split(/\s+/).filter(Boolean);
  }

  /** Whether a server is open for the filter only (its own state is closed). */
  static openedByFilter(server) {
    return server.dataset.filterOpened === "true";
  }

  /** Filter the servers drawn now (called again after each redraw). */
  apply() {
    const words = this.words;
    let matching = 0;
    for (const server of this.box.querySelectorAll("details.server")) {
      let hits = 0;
      for (const item of server.querySelectorAll(".tool-item")) {
        const hit = words.every((word) => (item.dataset.search || "").includes(word));
        item.hidden = !hit;
        if (hit) hits += 1;
      }
      if (!words.length) {
        server.hidden = false;
        if (ToolFilter.openedByFilter(server)) server.open = false;
        delete server.dataset.filterOpened;
        continue;
      }
      server.hidden = hits === 0;
      if (hits && !server.open) {
        server.open = true;
        server.dataset.filterOpened = "true";
      }
      matching += hits;
    }
    this.note.hidden = !words.length;
    this.note.textContent = !words.length ? "" : matching ? `${plural(matching)} match` : "No tool matches the filter.";
  }
}
