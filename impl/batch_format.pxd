# Cython's declarations for impl/batch_format.py, read only by `kraftspec compile` (plain Python
# never reads them): the C integers of the loop that splits a batch's payload into its frames, which
# a snapshot's load runs once per record. cli/compiled.py says why and what may be declared.

cimport cython

@cython.locals(frames=list, position=Py_ssize_t, end=Py_ssize_t, size=Py_ssize_t, stop=Py_ssize_t, index=Py_ssize_t)
cpdef _split_records(bytes payload, Py_ssize_t count, bint keep)
