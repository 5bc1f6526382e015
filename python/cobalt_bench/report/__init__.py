'''`cobalt-bench report`: one page per run answering "is this machine fit for purpose, and
if not, why", in Markdown (plots beside it as PNG files) and as one self-contained HTML
file: report.model (what the page says), report.rows (its tables), report.markdown,
report.html, report.plots, report.write, and report.compare (`report --compare`).
'''
