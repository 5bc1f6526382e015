'''A cb-linktest results file (.npz) and what `cobalt-bench linktest-report` makes of it,
layer linktest (docs/architecture.md): below the compliance report, which draws the same
heat map, and the command line, which prints and exits.

  results_file  reading and checking the .npz (load)
  analysis      what the reports show: bandwidths, flagged links, retest, per host (Analysis)
  text          the text report, as lines
  figures       heat map, histogram and host x host view; the PNG files
  pages, pdf    the PDF report: its page layout, its sections (write_pdf)

numpy and matplotlib are passed in (`np`) or imported when drawing, never at import: the
command says what is missing, or re-runs itself with the checkout's .venv, first.
'''
