/* A figure opens at its full size when tapped: on a phone the column shows it at a third of
   the size it was drawn at, and the full image can be zoomed. */
(() => {
  document.addEventListener("DOMContentLoaded", () => {
    for (const image of document.querySelectorAll("figure img")) {
      if (image.closest("a")) continue;
      const link = document.createElement("a");
      link.href = image.currentSrc || image.src;
      link.className = "figure-full-size";
      link.setAttribute("aria-label", `Open at full size: ${image.alt || "the figure"}`.slice(0, 160));
      image.replaceWith(link);
      link.appendChild(image);
    }
  });
})();
