/* Special functions written once for both backends: erfinv, i0e/i1e, ndtri, erfcx, log_ndtr,
 * bessel_j0/j1, spherical_bessel_j0, Hurwitz zeta and the regularized incomplete gamma functions.
 * No libm has them, so they come from published approximations (Cephes, as torch and SciPy use
 * them).
 *
 * Every function takes and returns double: both float dtypes compute in double and round once,
 * since the series and recurrences below would lose several float32 digits otherwise.
 *
 * Included by the Cython CPU kernels (minitorch/_cpu/elementwise.pyx, `cdef extern from`, compiled
 * as C) and by the CUDA kernels (minitorch/_gpu/kernels/elementwise.cu, compiled by NVRTC, nvcc
 * or the test emulator's g++). A CUDA includer defines SPECIAL_DEVICE as __device__ first and
 * gets CUDA's builtin double math; a C includer includes <math.h> first. The file includes no
 * header itself: NVRTC has none, and the CUDA loader pastes this text into each module.
 */
#ifndef MINITORCH_SPECIAL_MATH_H
#define MINITORCH_SPECIAL_MATH_H

/* SPECIAL_FN for the functions, SPECIAL_INLINE for the small helpers: the CPU's results are
 * bit-for-bit those of the Cython code this replaced only with the same inlining hints (NaN signs
 * differ otherwise). */
#ifdef SPECIAL_DEVICE
#define SPECIAL_FN SPECIAL_DEVICE static
#define SPECIAL_INLINE SPECIAL_DEVICE static inline
#define SPECIAL_TABLE SPECIAL_DEVICE static const
#define SPECIAL_INF __longlong_as_double(0x7ff0000000000000LL)
#define SPECIAL_NAN __longlong_as_double(0x7ff8000000000000LL)
#else   /* C: the includer has included <math.h> (special_math.pxd cimports libc.math first) */
#define SPECIAL_FN static
#define SPECIAL_INLINE static inline
#define SPECIAL_TABLE static const
#define SPECIAL_INF ((double)INFINITY)
#define SPECIAL_NAN ((double)NAN)
#endif

#define SPECIAL_MACHEP 1.11022302462515654042e-16           /* 2^-53 */
#define SPECIAL_SQRT_PI_INV 0.564189583547756286948079451561  /* 1 / sqrt(pi) */

/* Chebyshev coefficients from the Cephes Math Library (S. Moshier, i0.c / i1.c), as torch uses:
 * exp(-x) I0(x) on [0, 8] and exp(-x) sqrt(x) I0(x) on the inverted interval [8, inf);
 * exp(-x) I1(x) / x on [0, 8] and exp(-x) sqrt(x) I1(x) on [8, inf). */
SPECIAL_TABLE double I0E_A[30] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1};
SPECIAL_TABLE double I0E_B[25] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1};
SPECIAL_TABLE double I1E_A[29] = {
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1};
SPECIAL_TABLE double I1E_B[25] = {
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1};

/* ndtri (Cephes ndtri.c): P0/Q0 for |y - 1/2| <= 3/8, P1/Q1 for z = sqrt(-2 log y) in [2, 8],
 * P2/Q2 for z in [8, 64]; Q* lead with an implied 1. */
SPECIAL_TABLE double NDTRI_P0[5] = {
    -5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
    1.39312609387279679503E1, -1.23916583867381258016E0};
SPECIAL_TABLE double NDTRI_Q0[8] = {
    1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
    -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
    1.59056225126211695515E1, -1.18331621121330003142E0};
SPECIAL_TABLE double NDTRI_P1[9] = {
    4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
    4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
    -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4};
SPECIAL_TABLE double NDTRI_Q1[8] = {
    1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
    1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
    -3.80806407691578277194E-2, -9.33259480895457427372E-4};
SPECIAL_TABLE double NDTRI_P2[9] = {
    3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
    1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
    3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9};
SPECIAL_TABLE double NDTRI_Q2[8] = {
    6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
    2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
    2.89247864745380683936E-6, 6.79019408009981274425E-9};

/* Bessel J0 and J1 (Cephes j0.c / j1.c): R/(Q with an implied leading 1) times the factors of the
 * first two zeros on [0, 5]; the Hankel asymptotic form P cos - Q sin beyond. */
SPECIAL_TABLE double J0_PP[7] = {
    7.96936729297347051624E-4, 8.28352392107440799803E-2, 1.23953371646414299388E0,
    5.44725003058768775090E0, 8.74716500199817011941E0, 5.30324038235394892183E0,
    9.99999999999999997821E-1};
SPECIAL_TABLE double J0_PQ[7] = {
    9.24408810558863637013E-4, 8.56288474354474431428E-2, 1.25352743901058953537E0,
    5.47097740330417105182E0, 8.76190883237069594232E0, 5.30605288235394617618E0,
    1.00000000000000000218E0};
SPECIAL_TABLE double J0_QP[8] = {
    -1.13663838898469149931E-2, -1.28252718670509318512E0, -1.95539544257735972385E1,
    -9.32060152123768231369E1, -1.77681167980488050595E2, -1.47077505154951170175E2,
    -5.14105326766599330220E1, -6.05014350600728481186E0};
SPECIAL_TABLE double J0_QQ[7] = {
    6.43178256118178023184E1, 8.56430025976980587198E2, 3.88240183605401609683E3,
    7.24046774195652478189E3, 5.93072701187316984827E3, 2.06209331660327847417E3,
    2.42005740240291393179E2};
SPECIAL_TABLE double J0_RP[4] = {
    -4.79443220978201773821E9, 1.95617491946556577543E12, -2.49248344360967716204E14,
    9.70862251047306323952E15};
SPECIAL_TABLE double J0_RQ[8] = {
    4.99563147152651017219E2, 1.73785401676374683123E5, 4.84409658339962045305E7,
    1.11855537045356834862E10, 2.11277520115489217587E12, 3.10518229857422583814E14,
    3.18121955943204943306E16, 1.71086294081043136091E18};
SPECIAL_TABLE double J1_PP[7] = {
    7.62125616208173112003E-4, 7.31397056940917570436E-2, 1.12719608129684925192E0,
    5.11207951146807644818E0, 8.42404590141772420927E0, 5.21451598682361504063E0,
    1.00000000000000000254E0};
SPECIAL_TABLE double J1_PQ[7] = {
    5.71323128072548699714E-4, 6.88455908754495404082E-2, 1.10514232634061696926E0,
    5.07386386128601488557E0, 8.39985554327604159757E0, 5.20982848682361821619E0,
    9.99999999999999997461E-1};
SPECIAL_TABLE double J1_QP[8] = {
    5.10862594750176621635E-2, 4.98213872951233449420E0, 7.58238284132545283818E1,
    3.66779609360150777800E2, 7.10856304998926107277E2, 5.97489612400613639965E2,
    2.11688757100572135698E2, 2.52070205858023719784E1};
SPECIAL_TABLE double J1_QQ[7] = {
    7.42373277035675149943E1, 1.05644886038262816351E3, 4.98641058337653607651E3,
    9.56231892404756170795E3, 7.99704160447350683650E3, 2.82619278517639096600E3,
    3.36093607810698293419E2};
SPECIAL_TABLE double J1_RP[4] = {
    -8.99971225705559398224E8, 4.52228297998194034323E11, -7.27494245221818276015E13,
    3.68295732863852883286E15};
SPECIAL_TABLE double J1_RQ[8] = {
    6.20836478118054335476E2, 2.56987256757748830383E5, 8.35146791431949253037E7,
    2.21511595479792499675E10, 4.74914122079991414898E12, 7.84369607876235854894E14,
    8.95222336184627338078E16, 5.32278620332680085395E18};

/* Euler-Maclaurin coefficients (2k)! / B_2k of the Hurwitz zeta tail (Cephes zeta.c) */
SPECIAL_TABLE double ZETA_A[12] = {
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18};

/* Lanczos sum (g = 6.0246800407767296) scaled by exp(g) (Boost, via SciPy and torch's igamma):
 * it gives x^a e^-x / Gamma(a) without the cancellation of a log x - x - lgamma(a) when a ~ x. */
SPECIAL_TABLE double LANCZOS_NUM[13] = {
    0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
    19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
    6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
    601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
    14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
    86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
    56906521.91347156388090791033559122686859};
SPECIAL_TABLE double LANCZOS_DENOM[13] = {
    1., 66., 1925., 32670., 357423., 2637558., 13339535., 45995730., 105258076., 150917976.,
    120543840., 39916800., 0.};
#define SPECIAL_LANCZOS_G 6.024680040776729583740234375
#define SPECIAL_IGAMMA_MAXITER 2000

/* c[0] x^n + ... + c[n] (Horner) */
SPECIAL_INLINE double polevl(double x, const double* c, int n) {
    double r = c[0];
    int i;
    for (i = 1; i < n + 1; i++) r = r * x + c[i];
    return r;
}

/* x^n + c[0] x^(n-1) + ... + c[n-1]: polevl with an implied leading 1 */
SPECIAL_INLINE double p1evl(double x, const double* c, int n) {
    double r = x + c[0];
    int i;
    for (i = 1; i < n; i++) r = r * x + c[i];
    return r;
}

/* a Chebyshev series of n terms at x in [-2, 2] (Clenshaw's recurrence, as in Cephes) */
SPECIAL_INLINE double chbevl(double x, const double* c, int n) {
    double b0 = c[0], b1 = 0, b2 = 0;
    int i;
    for (i = 1; i < n; i++) {
        b2 = b1;
        b1 = b0;
        b0 = x * b1 - b2 + c[i];
    }
    return 0.5 * (b0 - b2);
}

/* torch's calc_erfinv: G. Pavlis' rational first guess (central |y| <= 0.7, tail beyond) refined
 * by two Newton steps on erf(x) = y */
SPECIAL_FN double sp_erfinv(double y) {
    double ay = fabs(y), x, z;
    if (ay > 1) return SPECIAL_NAN;
    if (ay == 1) return copysign(SPECIAL_INF, y);
    if (ay <= 0.7) {
        z = y * y;
        x = y * (((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899) /
            ((((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1);
    } else {
        z = sqrt(-log((1 - ay) / 2));
        x = copysign(((1.641345311 * z + 3.429567803) * z - 1.624906493) * z - 1.970840454, y) /
            ((1.637067800 * z + 3.543889200) * z + 1);
    }
    x -= (erf(x) - y) / (2 * SPECIAL_SQRT_PI_INV * exp(-x * x));
    x -= (erf(x) - y) / (2 * SPECIAL_SQRT_PI_INV * exp(-x * x));
    return x;
}

/* e^-|x| I0(x) */
SPECIAL_FN double sp_i0e(double x) {
    x = fabs(x);
    if (x <= 8) return chbevl(x / 2 - 2, I0E_A, 30);
    return chbevl(32 / x - 2, I0E_B, 25) / sqrt(x);
}

/* e^-|x| I1(x); odd: computed for |x| and the sign put back */
SPECIAL_FN double sp_i1e(double x) {
    double ax = fabs(x), r;
    if (ax <= 8)
        r = chbevl(ax / 2 - 2, I1E_A, 29) * ax;
    else
        r = chbevl(32 / ax - 2, I1E_B, 25) / sqrt(ax);
    return x < 0 ? -r : r;
}

SPECIAL_INLINE double sp_i0(double x) { return exp(fabs(x)) * sp_i0e(x); }
SPECIAL_INLINE double sp_i1(double x) { return exp(fabs(x)) * sp_i1e(x); }

/* x with Phi(x) = y0 (Cephes ndtri): 0 and 1 give -inf and inf, outside [0, 1] NaN */
SPECIAL_FN double sp_ndtri(double y0) {
    double y = y0, x, z, x0;
    int negate = 1;
    if (y0 == 0) return -SPECIAL_INF;
    if (y0 == 1) return SPECIAL_INF;
    if (!(0 < y0 && y0 < 1)) return SPECIAL_NAN;     /* NaN too */
    if (y > 1 - 0.13533528323661269189) {            /* exp(-2): use the symmetric tail */
        y = 1 - y;
        negate = 0;
    }
    if (y > 0.13533528323661269189) {
        y -= 0.5;
        z = y * y;
        return (y + y * (z * polevl(z, NDTRI_P0, 4) / p1evl(z, NDTRI_Q0, 8))) *
               2.50662827463100050242;
    }
    x = sqrt(-2 * log(y));
    x0 = x - log(x) / x;
    z = 1 / x;
    if (x < 8)
        x = x0 - z * polevl(z, NDTRI_P1, 8) / p1evl(z, NDTRI_Q1, 8);
    else
        x = x0 - z * polevl(z, NDTRI_P2, 8) / p1evl(z, NDTRI_Q2, 8);
    return negate ? -x : x;
}

/* exp(x * x) without the rounding error of x * x (Cephes expx2): x = m + f with m a multiple of
 * 1/128, so m * m is exact and the small rest 2mf + f^2 goes to a second exp */
SPECIAL_FN double expx2(double x) {
    double m, f;
    x = fabs(x);
    m = floor(x * 128 + 0.5) / 128;
    f = x - m;
    return exp(m * m) * exp(2 * m * f + f * f);
}

/* erfcx for x >= 0: the product below 26 (erfc is accurate relative to itself, expx2 is
 * exact-ish), the Laplace continued fraction 1/sqrt(pi) / (x + (1/2)/(x + 1/(x + ...))) beyond,
 * where erfc underflows */
SPECIAL_FN double sp_erfcx_nonnegative(double x) {
    double t;
    int k;
    if (x < 26) return expx2(x) * erfc(x);
    t = x;
    for (k = 12; k > 0; k--) t = x + 0.5 * k / t;   /* converged to double precision */
    return SPECIAL_SQRT_PI_INV / t;
}

/* exp(x^2) erfc(x); for x < 0, 2 exp(x^2) - erfcx(-x) */
SPECIAL_FN double sp_erfcx(double x) {
    if (x != x) return x;
    if (x < 0) {
        if (x < -26.7) return SPECIAL_INF;
        return 2 * expx2(x) - sp_erfcx_nonnegative(-x);
    }
    return sp_erfcx_nonnegative(x);
}

/* log Phi(x) as torch (SciPy): through erfcx below -1, where Phi underflows */
SPECIAL_FN double sp_log_ndtr(double x) {
    double t = x * 0.707106781186547524400844362104849039;
    if (x < -1) return log(sp_erfcx(-t) / 2) - t * t;
    return log1p(-erfc(t) / 2);
}

SPECIAL_FN double sp_bessel_j0(double x) {
    double z, w, p, q;
    x = fabs(x);
    if (x <= 5) {
        z = x * x;
        if (x < 1e-5) return 1 - z / 4;
        return (z - 5.78318596294678452118E0) * (z - 3.04712623436620863991E1) *
               polevl(z, J0_RP, 3) / p1evl(z, J0_RQ, 8);
    }
    w = 5 / x;
    z = w * w;
    p = polevl(z, J0_PP, 6) / polevl(z, J0_PQ, 6);
    q = polevl(z, J0_QP, 7) / p1evl(z, J0_QQ, 7);
    return (p * cos(x - 0.785398163397448309615660845819875721) -
            w * q * sin(x - 0.785398163397448309615660845819875721)) *
           0.797884560802865355879892119868763737 / sqrt(x);
}

/* odd: computed for |x| and the sign put back */
SPECIAL_FN double sp_bessel_j1(double x) {
    double ax = fabs(x), z, w, p, q, r;
    if (ax <= 5) {
        z = ax * ax;
        r = polevl(z, J1_RP, 3) / p1evl(z, J1_RQ, 8) * ax * (z - 1.46819706421238932572E1) *
            (z - 4.92184563216946036703E1);
    } else {
        w = 5 / ax;
        z = w * w;
        p = polevl(z, J1_PP, 6) / polevl(z, J1_PQ, 6);
        q = polevl(z, J1_QP, 7) / p1evl(z, J1_QQ, 7);
        r = (p * cos(ax - 2.356194490192344928846982537459627163) -
             w * q * sin(ax - 2.356194490192344928846982537459627163)) *
            0.797884560802865355879892119868763737 / sqrt(ax);
    }
    return x < 0 ? -r : r;
}

/* spherical Bessel j0 = sin(x) / x as torch computes it: 0 at +-inf, its Taylor polynomial for
 * |x| < 1/2 (where sin(x) / x would be 0 / 0 at x = 0) */
SPECIAL_FN double sp_spherical_bessel_j0(double x) {
    double z;
    if (x == SPECIAL_INF || x == -SPECIAL_INF) return 0;
    if (fabs(x) < 0.5) {
        z = x * x;
        return 1 + z * (-1.0 / 6 + z * (1.0 / 120 + z * (-1.0 / 5040 + z * (1.0 / 362880 +
               z * (-1.0 / 39916800 + z * (1.0 / 6227020800.0))))));
    }
    return sin(x) / x;
}

/* Hurwitz zeta (Cephes zeta.c, as torch): direct sum until the terms are negligible or q + k > 9,
 * then the Euler-Maclaurin tail. x < 1 is NaN, x == 1 a pole; q a non-positive integer is a pole,
 * other negative q need an integer x (and take about |q| steps to walk up to 9, as in torch). */
SPECIAL_FN double sp_zeta(double x, double q) {
    double a, b = 0, k, s, t, w;
    int i = 0;
    if (x == 1) return SPECIAL_INF;
    if (x < 1) return SPECIAL_NAN;
    if (q <= 0) {
        if (q == floor(q)) return SPECIAL_INF;
        if (x != floor(x)) return SPECIAL_NAN;
    }
    s = pow(q, -x);
    a = q;
    while (i < 9 || a <= 9) {
        i += 1;
        a += 1;
        b = pow(a, -x);
        s += b;
        if (-SPECIAL_MACHEP * s < b && b < SPECIAL_MACHEP * s) return s;
    }
    w = a;
    s += b * w / (x - 1) - 0.5 * b;
    a = 1;
    k = 0;
    for (i = 0; i < 12; i++) {
        a *= x + k;
        b /= w;
        t = a * b / ZETA_A[i];
        s += t;
        if (fabs(t / s) < SPECIAL_MACHEP) return s;
        k += 1;
        a *= x + k;
        b /= w;
        k += 1;
    }
    return s;
}

/* The ratio of two degree-12 polynomials, in 1/x (coefficients reversed) for x > 1 */
SPECIAL_FN double lanczos_sum_expg_scaled(double x) {
    double num = 0, den = 0, y;
    int i;
    if (fabs(x) <= 1) {
        for (i = 0; i < 13; i++) {
            num = num * x + LANCZOS_NUM[i];
            den = den * x + LANCZOS_DENOM[i];
        }
    } else {
        y = 1 / x;
        for (i = 12; i > -1; i--) {
            num = num * y + LANCZOS_NUM[i];
            den = den * y + LANCZOS_DENOM[i];
        }
    }
    return num / den;
}

/* x^a e^-x / Gamma(a), the prefactor of both series (torch's _igam_helper_fac) */
SPECIAL_FN double igamma_factor(double a, double x) {
    double ax, fac, res, num;
    if (fabs(a - x) > 0.4 * fabs(a)) {
        ax = a * log(x) - x - lgamma(a);
        return ax < -7.09782712893383996843E2 ? 0.0 : exp(ax);
    }
    fac = a + SPECIAL_LANCZOS_G - 0.5;
    res = sqrt(fac / 2.718281828459045) / lanczos_sum_expg_scaled(a);
    if (a < 200 && x < 200) return res * exp(a - x) * pow(x / fac, a);
    num = (x - a - SPECIAL_LANCZOS_G + 0.5) / fac;
    return res * exp(a * (log1p(num) - num) + x * (0.5 - SPECIAL_LANCZOS_G) / fac);
}

/* P(a, x) by its power series (DLMF 8.11.4) */
SPECIAL_FN double igamma_series(double a, double x) {
    double ax = igamma_factor(a, x), r = a, c = 1, total = 1;
    int i;
    if (ax == 0) return 0;
    for (i = 0; i < SPECIAL_IGAMMA_MAXITER; i++) {
        r += 1;
        c *= x / r;
        total += c;
        if (c <= SPECIAL_MACHEP * total) break;
    }
    return total * ax / a;
}

/* Q(a, x) for small x (DLMF 8.7.3), written to avoid cancellation */
SPECIAL_FN double igammac_series(double a, double x) {
    double fac = 1, total = 0, term, logx;
    int n;
    for (n = 1; n < SPECIAL_IGAMMA_MAXITER; n++) {
        fac *= -x / n;
        term = fac / (a + n);
        total += term;
        if (fabs(term) <= SPECIAL_MACHEP * fabs(total)) break;
    }
    logx = log(x);
    return -expm1(a * logx - lgamma(1 + a)) - exp(a * logx - lgamma(a)) * total;
}

/* Q(a, x) for x > 1.1, x >= a by its continued fraction (DLMF 8.9.2), rescaled when the
 * convergents grow large */
SPECIAL_FN double igammac_fraction(double a, double x) {
    double ax = igamma_factor(a, x), y, z, c = 0, yc, r, t, ans;
    double pk, qk, pkm1, qkm1, pkm2 = 1, qkm2 = x;
    int i;
    if (ax == 0) return 0;
    y = 1 - a;
    z = x + y + 1;
    pkm1 = x + 1;
    qkm1 = z * x;
    ans = pkm1 / qkm1;
    for (i = 0; i < SPECIAL_IGAMMA_MAXITER; i++) {
        c += 1;
        y += 1;
        z += 2;
        yc = y * c;
        pk = pkm1 * z - pkm2 * yc;
        qk = qkm1 * z - qkm2 * yc;
        if (qk != 0) {
            r = pk / qk;
            t = fabs((ans - r) / r);
            ans = r;
        } else {
            t = 1;
        }
        pkm2 = pkm1;
        pkm1 = pk;
        qkm2 = qkm1;
        qkm1 = qk;
        if (fabs(pk) > 4.503599627370496e15) {
            pkm2 *= SPECIAL_MACHEP * 2;
            pkm1 *= SPECIAL_MACHEP * 2;
            qkm2 *= SPECIAL_MACHEP * 2;
            qkm1 *= SPECIAL_MACHEP * 2;
        }
        if (t <= SPECIAL_MACHEP) break;
    }
    return ans * ax;
}

/* torch's (SciPy's) values at the edges of the domain, NaN where it is not one */
SPECIAL_FN double igamma_boundary(double a, double x, int upper) {
    double lower_value;
    if (x < 0 || a < 0 || (a == 0 && !(x > 0)) || (a == SPECIAL_INF && x == SPECIAL_INF))
        return SPECIAL_NAN;
    if (a == 0 || x == SPECIAL_INF)
        lower_value = 1;
    else                                /* x == 0 or a == inf */
        lower_value = 0;
    return upper ? 1 - lower_value : lower_value;
}

SPECIAL_INLINE int igamma_at_boundary(double a, double x) {
    return !(x > 0 && a > 0 && x < SPECIAL_INF && a < SPECIAL_INF);
}

/* Q(a, x) as torch's calc_igammac picks its method, less the uniform asymptotic expansion for
 * large a ~ x (the series and the fraction still converge there) */
SPECIAL_FN double sp_igammac(double a, double x) {
    if (igamma_at_boundary(a, x))
        return x != x || a != a ? x + a : igamma_boundary(a, x, 1);
    if (x > 1.1) return x < a ? 1 - igamma_series(a, x) : igammac_fraction(a, x);
    if ((x <= 0.5 && -0.4 / log(x) < a) || (x > 0.5 && x * 1.1 < a))
        return 1 - igamma_series(a, x);
    return igammac_series(a, x);
}

/* P(a, x) as torch's calc_igamma (see sp_igammac) */
SPECIAL_FN double sp_igamma(double a, double x) {
    if (igamma_at_boundary(a, x))
        return x != x || a != a ? x + a : igamma_boundary(a, x, 0);
    if (x > 1 && x > a) return 1 - sp_igammac(a, x);
    return igamma_series(a, x);
}

#endif  /* MINITORCH_SPECIAL_MATH_H */
