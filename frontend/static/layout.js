// Panels: the tools panel is a sidebar on wide screens and a drawer on
// narrow ones; on narrow screens the canvas covers the chat.

const NARROW = window.matchMedia("(max-width: 899px)");

export function setupLayout({ toggle, close, scrim }) {
  const body = document.body;

  const setTools = (open, { focus = false } = {}) => {
    body.dataset.tools = open ? "open" : "closed";
    toggle.setAttribute("aria-expanded", String(open));
    toggle.title = open ? "Hide tools" : "Show tools";
    scrim.hidden = !(open && NARROW.matches);
    if (focus && open) document.getElementById("tools-panel").querySelector("select, input, button")?.focus();
    if (focus && !open) toggle.focus();
  };

  setTools(!NARROW.matches);
  NARROW.addEventListener("change", () => setTools(!NARROW.matches));
  toggle.addEventListener("click", () => setTools(body.dataset.tools !== "open", { focus: NARROW.matches }));
  close.addEventListener("click", () => setTools(false, { focus: true }));
  scrim.addEventListener("click", () => setTools(false));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && NARROW.matches && body.dataset.tools === "open") setTools(false, { focus: true });
  });

  return {
    canvasVisible(open) {
      body.dataset.canvas = open ? "open" : "closed";
      // Chat, tools and canvas side by side leave the chat too narrow on
      // medium screens: the tools panel steps aside (the ☰ button brings it back).
      if (open && !NARROW.matches && window.innerWidth < 1440 && body.dataset.tools === "open") setTools(false);
    },
  };
}
