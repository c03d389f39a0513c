# Cython declarations of minitorch/_kernels/special_math.h, the special functions shared with the
# CUDA kernels (double in, double out; see the header for where each comes from).
from libc.math cimport fabs    # <math.h> goes before special_math.h, which uses it

cdef extern from "special_math.h" nogil:
    double sp_erfinv(double y)
    double sp_i0(double x)
    double sp_i0e(double x)
    double sp_i1(double x)
    double sp_i1e(double x)
    double sp_ndtri(double y)
    double sp_log_ndtr(double x)
    double sp_erfcx(double x)
    double sp_bessel_j0(double x)
    double sp_bessel_j1(double x)
    double sp_spherical_bessel_j0(double x)
    double sp_zeta(double x, double q)
    double sp_igamma(double a, double x)
    double sp_igammac(double a, double x)
