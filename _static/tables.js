/* Wide tables on narrow screens (_static/phone.css). Every cell of a book table
   (residual_lib.pages.tables) gets its column's header as data-label, which the phone layout shows
   before the value; a table that does not fit its column is marked book-table-reflow, and on a
   narrow screen its rows become blocks of "header  value" lines instead of a box that scrolls
   sideways. The table, header and cell roles are set explicitly so that a screen reader still
   reads a table when CSS lays it out as blocks. Re-measured when the window is resized and
   when a folded section (<details>) opens. */
(() => {
  const REFLOW = "book-table-reflow";

  function label(table) {
    const head = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
    if (!head) return false;
    const names = [];
    for (const cell of head.cells) {
      for (let i = 0; i < cell.colSpan; i++) names.push(cell.textContent.trim());
    }
    table.setAttribute("role", "table");
    for (const group of [table.tHead, ...table.tBodies]) group.setAttribute("role", "rowgroup");
    for (const row of table.rows) {
      row.setAttribute("role", "row");
      let column = 0;
      for (const cell of row.cells) {
        const header = row.parentElement === table.tHead;
        cell.setAttribute("role", header ? "columnheader" : cell.tagName === "TH" ? "rowheader" : "cell");
        if (!header && names[column]) cell.dataset.label = names[column];
        column += cell.colSpan;
      }
    }
    return true;
  }

  let tables = [];

  function fit() {
    for (const table of tables) {
      table.classList.remove(REFLOW);
      const box = table.parentElement;
      if (box && table.offsetWidth > box.clientWidth + 1) table.classList.add(REFLOW);
    }
  }

  let pending = false;
  function refit() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; fit(); });
  }

  document.addEventListener("DOMContentLoaded", () => {
    tables = Array.from(document.querySelectorAll("table.book-table")).filter(label);
    fit();
    window.addEventListener("resize", refit);
    document.addEventListener("toggle", refit, true);  // a table inside a <details> that opens
  });
})();
