'''The results store: the model of a run (store.model), where runs live (store.runs), and
the readers of ReFrame's report.json and perflogs and of kernel documents
(store.documents, store.reader).'''
