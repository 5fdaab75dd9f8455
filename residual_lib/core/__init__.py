"""The bottom layer, which imports nothing of the package: atomic files (:mod:`.files`), where
the checkout and its results are (:mod:`.paths`), and how numbers and lists are written in
sentences (:mod:`.text`)."""
