"""The FP32 ladder: CUDA C levels v1..v10 on the FFMA units, one level per .py/.cu pair (v9 re-tunes v8's source).
Their shared host checks and device helpers are in common/."""
