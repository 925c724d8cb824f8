# Cython's declarations for impl/codec.py, read only by `kraftspec compile` (plain Python never
# reads them): RecordCodec as an extension type whose attributes are objects, as its __slots__ are,
# and the C integers and containers of decode_frames, which a snapshot's load runs once per record.
# cli/compiled.py says why and what may be declared.

cimport cython

cdef class RecordCodec:
    cdef public object formats, frame_type, _fast_frame_type, _partition_head
    cdef public dict _encoders, _decoders, _frame_decoders, _partition_shapes

    @cython.locals(out=list, shapes=dict, frame=bytes, head=bytes, size=Py_ssize_t, replicas=Py_ssize_t,
                   key=Py_ssize_t, values=tuple)
    cpdef decode_frames(self, frames)
