// ferrofem kernel prelude: no CUDA headers are needed (NVRTC without include paths).
#ifndef REAL
#define REAL double
#endif
typedef REAL real;
typedef unsigned int u32;
typedef unsigned long long u64;
#define FF_RESTRICT __restrict__
