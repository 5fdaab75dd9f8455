/* Three repairs to the theme's markup (pydata-sphinx-theme, sphinx-book-theme) that its
   templates offer no setting for; tests/test_book.py checks them with axe.
   - The search fields show "Search Ctrl+K" but are labelled "Search": a speech-input user who
     says what they see does not reach them (WCAG 2.5.3, Label in Name). Without the label, the
     name is the visible text.
   - The colour-mode button shows the current mode's icon, whose title ("Light", "Dark",
     "System Settings") is its visible text, but is labelled "Color mode" alone: the label
     names the mode too, and follows it when the reader switches.
   - The book's title above the contents list sits outside every landmark, so a screen reader
     that moves between regions skips it: its part of the sidebar becomes the book's navigation
     (the contents list inside it keeps its own label). */
(() => {
  function modeTitle(button, mode) {
    const icon = button.querySelector(`[data-mode="${mode}"]`);
    if (!icon) return "";
    const title = icon.querySelector("title");
    return (title ? title.textContent : icon.getAttribute("title") || "").trim();
  }

  function labelModeButtons() {
    const mode = document.documentElement.dataset.mode || "auto";
    for (const button of document.querySelectorAll(".theme-switch-button")) {
      const name = button.dataset.bsTitle || "Color mode";
      const title = modeTitle(button, mode);
      button.setAttribute("aria-label", title ? `${name}: ${title}` : name);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const field of document.querySelectorAll(".search-button-field[aria-label]")) {
      if (field.textContent.trim()) field.removeAttribute("aria-label");
    }
    labelModeButtons();
    new MutationObserver(labelModeButtons).observe(document.documentElement,
                                                   {attributes: true, attributeFilter: ["data-mode"]});
    const start = document.querySelector(".bd-sidebar-primary .sidebar-primary-items__start");
    if (start && !start.closest("[role], nav, header, main, aside, footer")) {
      start.setAttribute("role", "navigation");
      start.setAttribute("aria-label", "Book");
    }
  });
})();
