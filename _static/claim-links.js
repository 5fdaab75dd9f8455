/* A link to a claim (scorecard.html#claim-..., from a chapter's verdict box or the verdict
   grid) lands on its block open: the scorecard's claim blocks are folded <details>, and a
   browser scrolls to a folded one without opening it. On load and on every change of the
   address's #fragment, the <details> the fragment names (and any it sits in) is opened and
   scrolled into view. */
(function () {
  function openLinkedBlock() {
    var id;
    try {
      id = decodeURIComponent(window.location.hash.slice(1));
    } catch (e) {
      return;
    }
    var target = id && document.getElementById(id);
    if (!target) return;
    var opened = false;
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS" && !node.open) {
        node.open = true;
        opened = true;
      }
    }
    if (opened || target.tagName === "DETAILS") target.scrollIntoView({ block: "start" });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", openLinkedBlock);
  } else {
    openLinkedBlock();
  }
  window.addEventListener("hashchange", openLinkedBlock);
})();
