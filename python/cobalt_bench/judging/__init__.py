'''Judging: one rule for every result, wherever it is judged (the ReFrame checks, `cobalt-bench
judge`, the report): ReFrame's reference bounds (cobalt_bench.site.bounds), the kernels'
sanity rule (judging.sanity), a case's judgement by the site's references (judging.judge)
and the verdict of a run (judging.verdict). Nothing here changes what it judges.
'''
