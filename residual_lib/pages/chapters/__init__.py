"""What each chapter finds, as functions: the tables and sentences a section notebook shows.

A notebook states its parameters, asks for its records and calls these; the logic that
turns records into a finding lives here, where the test suite can reach it. One module per
chapter, named after the chapter's section (``notebooks/07_mechanism.py`` calls
:mod:`residual_lib.pages.chapters.mechanism`); a chapter too long for one module splits off a
part (chapter 11's context, :mod:`residual_lib.pages.chapters.budget_context`; chapter 12's
block 0 and α_tt, :mod:`residual_lib.pages.chapters.paper_scale_inside`).
"""
