/* The page list (☰) and "on this page" buttons on a narrow screen. The theme draws two of each
   (pydata-sphinx-theme's navbar, hidden by sphinx-book-theme, and the book theme's header), but
   binds its handlers to the first of each in the page only: the visible one did nothing. Here a
   tap on any other toggle is handed to the bound one, which opens the list as a dialog (or, on
   a wide screen, folds the sidebar away). */
(() => {
  document.addEventListener("DOMContentLoaded", () => {
    for (const kind of ["primary", "secondary"]) {
      const [bound, ...others] = document.querySelectorAll(`.${kind}-toggle`);
      for (const other of others) {
        other.addEventListener("click", (event) => {
          event.preventDefault();
          event.stopPropagation();
          bound.click();
        });
      }
    }
  });
})();
