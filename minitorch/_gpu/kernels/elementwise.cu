// Elementwise kernels: unary ops over a compact input, binary ops and where with every operand
// read through its own strides (a broadcast operand has stride 0 and is never materialised).
// The op is a kernel argument; the switch sits outside the element loop, so each op runs its own
// tight loop. Semantics match the CPU backend (minitorch/_cpu/elementwise.pyx).
#include "common.cuh"

#define ERR_ZERO_DIV 1
#define ERR_NEG_POW 2

MATH1(fabs) MATH1(exp) MATH1(log) MATH1(log1p) MATH1(expm1) MATH1(sqrt) MATH1(sin) MATH1(cos)
MATH1(tanh) MATH1(floor) MATH1(ceil) MATH1(rint) MATH1(trunc) MATH1(erf)
MATH1(sinh) MATH1(cosh) MATH1(tan) MATH1(asin) MATH1(acos) MATH1(atan) MATH1(asinh) MATH1(acosh)
MATH1(atanh) MATH1(log2) MATH1(log10) MATH1(exp2) MATH1(erfc) MATH1(lgamma)
MATH2(fmod) MATH2(pow) MATH2(atan2) MATH2(copysign) MATH2(hypot) MATH2(nextafter)

// ---------------------------------------------------------------------------------------------
// unary

template <typename T> __device__ __forceinline__ T sigmoid_of(T x) {
    // 1/(1+e^-x) through e = e^-|x|, so the exponential never overflows
    T e = m_exp(x > T(0) ? -x : x);
    T s = T(1) / (T(1) + e);
    return x >= T(0) ? s : e * s;
}

// digamma for x > 0 (or NaN): recurrence up to 10, then the asymptotic series (torch's)
template <typename T> __device__ __forceinline__ T digamma_positive(T x) {
    T result = T(0);
    while (x < T(10)) {
        result -= T(1) / x;
        x += T(1);
    }
    if (x == T(10)) return result + T(2.25175258906672110764);
    T z = T(0);
    if (x < T(1.0e17)) {
        z = T(1) / (x * x);
        z *= (((((T(8.33333333333333333333E-2) * z - T(2.10927960927960927961E-2)) * z
                 + T(7.57575757575757575758E-3)) * z - T(4.16666666666666666667E-3)) * z
               + T(3.96825396825396825397E-3)) * z - T(8.33333333333333333333E-3)) * z
             + T(8.33333333333333333333E-2);
    }
    return result + m_log(x) - T(0.5) / x - z;
}

// torch's calc_digamma: ±0 gives ∓inf, negative integers (and -inf) NaN, other negatives the
// reflection digamma(1 - x) - pi / tan(pi * x)
template <typename T> __device__ __forceinline__ T digamma_of(T x) {
    const double pi = 3.14159265358979323846;
    if (x == T(0)) return m_copysign(pos_inf<T>(), -x);
    if (x < T(0)) {
        T whole = m_trunc(x);
        if (x == whole) return pos_inf<T>() - pos_inf<T>();     // NaN
        double frac = (double)(x - whole);   // tan(pi * frac): pi * x would lose precision
        return digamma_positive(T(1) - x) - T(pi / m_tan(pi * frac));
    }
    return digamma_positive(x);
}

// torch's calc_trigamma: reflection below 1/2, six recurrence steps, asymptotic series
template <typename T> __device__ __forceinline__ T trigamma_of(T x) {
    const T pi = T(3.14159265358979323846);
    T sign = T(1), result = T(0);
    if (x < T(0.5)) {
        sign = T(-1);
        T s = m_sin(pi * x);
        result -= pi * pi / (s * s);
        x = T(1) - x;
    }
    for (int i = 0; i < 6; ++i) {
        result += T(1) / (x * x);
        x += T(1);
    }
    T ixx = T(1) / (x * x);
    result += (T(1) + T(1) / (T(2) * x)
               + ixx * (T(1) / T(6) - ixx * (T(1) / T(30) - ixx * (T(1) / T(42))))) / x;
    return sign * result;
}

// ---------------------------------------------------------------------------------------------
// special functions (ERFINV..BESSEL_J1, ZETA, IGAMMA, IGAMMAC), the CPU backend's algorithms
// (see minitorch/_cpu/elementwise.pyx for where each comes from). Both float dtypes compute in
// double and round once at the end.

#define SP_MACHEP 1.11022302462515654042e-16     // 2^-53
#define SP_SQRT_PI_INV 0.564189583547756286948079451561

// Cephes i0.c / i1.c Chebyshev coefficients: exp(-x) I0(x) on [0, 8], exp(-x) sqrt(x) I0(x)
// on [8, inf); exp(-x) I1(x) / x and exp(-x) sqrt(x) I1(x) likewise
__device__ const double I0E_A[30] = {
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
__device__ const double I0E_B[25] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1};
__device__ const double I1E_A[29] = {
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
__device__ const double I1E_B[25] = {
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1};

// Cephes ndtri.c (Q* lead with an implied 1)
__device__ const double NDTRI_P0[5] = {
    -5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
    1.39312609387279679503E1, -1.23916583867381258016E0};
__device__ const double NDTRI_Q0[8] = {
    1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
    -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
    1.59056225126211695515E1, -1.18331621121330003142E0};
__device__ const double NDTRI_P1[9] = {
    4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
    4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
    -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4};
__device__ const double NDTRI_Q1[8] = {
    1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
    1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
    -3.80806407691578277194E-2, -9.33259480895457427372E-4};
__device__ const double NDTRI_P2[9] = {
    3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
    1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
    3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9};
__device__ const double NDTRI_Q2[8] = {
    6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
    2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
    2.89247864745380683936E-6, 6.79019408009981274425E-9};

// Cephes j0.c / j1.c
__device__ const double J0_PP[7] = {
    7.96936729297347051624E-4, 8.28352392107440799803E-2, 1.23953371646414299388E0,
    5.44725003058768775090E0, 8.74716500199817011941E0, 5.30324038235394892183E0,
    9.99999999999999997821E-1};
__device__ const double J0_PQ[7] = {
    9.24408810558863637013E-4, 8.56288474354474431428E-2, 1.25352743901058953537E0,
    5.47097740330417105182E0, 8.76190883237069594232E0, 5.30605288235394617618E0,
    1.00000000000000000218E0};
__device__ const double J0_QP[8] = {
    -1.13663838898469149931E-2, -1.28252718670509318512E0, -1.95539544257735972385E1,
    -9.32060152123768231369E1, -1.77681167980488050595E2, -1.47077505154951170175E2,
    -5.14105326766599330220E1, -6.05014350600728481186E0};
__device__ const double J0_QQ[7] = {
    6.43178256118178023184E1, 8.56430025976980587198E2, 3.88240183605401609683E3,
    7.24046774195652478189E3, 5.93072701187316984827E3, 2.06209331660327847417E3,
    2.42005740240291393179E2};
__device__ const double J0_RP[4] = {
    -4.79443220978201773821E9, 1.95617491946556577543E12, -2.49248344360967716204E14,
    9.70862251047306323952E15};
__device__ const double J0_RQ[8] = {
    4.99563147152651017219E2, 1.73785401676374683123E5, 4.84409658339962045305E7,
    1.11855537045356834862E10, 2.11277520115489217587E12, 3.10518229857422583814E14,
    3.18121955943204943306E16, 1.71086294081043136091E18};
__device__ const double J1_PP[7] = {
    7.62125616208173112003E-4, 7.31397056940917570436E-2, 1.12719608129684925192E0,
    5.11207951146807644818E0, 8.42404590141772420927E0, 5.21451598682361504063E0,
    1.00000000000000000254E0};
__device__ const double J1_PQ[7] = {
    5.71323128072548699714E-4, 6.88455908754495404082E-2, 1.10514232634061696926E0,
    5.07386386128601488557E0, 8.39985554327604159757E0, 5.20982848682361821619E0,
    9.99999999999999997461E-1};
__device__ const double J1_QP[8] = {
    5.10862594750176621635E-2, 4.98213872951233449420E0, 7.58238284132545283818E1,
    3.66779609360150777800E2, 7.10856304998926107277E2, 5.97489612400613639965E2,
    2.11688757100572135698E2, 2.52070205858023719784E1};
__device__ const double J1_QQ[7] = {
    7.42373277035675149943E1, 1.05644886038262816351E3, 4.98641058337653607651E3,
    9.56231892404756170795E3, 7.99704160447350683650E3, 2.82619278517639096600E3,
    3.36093607810698293419E2};
__device__ const double J1_RP[4] = {
    -8.99971225705559398224E8, 4.52228297998194034323E11, -7.27494245221818276015E13,
    3.68295732863852883286E15};
__device__ const double J1_RQ[8] = {
    6.20836478118054335476E2, 2.56987256757748830383E5, 8.35146791431949253037E7,
    2.21511595479792499675E10, 4.74914122079991414898E12, 7.84369607876235854894E14,
    8.95222336184627338078E16, 5.32278620332680085395E18};

// (2k)! / B_2k of the Hurwitz zeta's Euler-Maclaurin tail (Cephes zeta.c)
__device__ const double ZETA_A[12] = {
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18};

// Lanczos sum scaled by exp(g), g = 6.0246800407767296 (Boost, via SciPy and torch's igamma)
__device__ const double LANCZOS_NUM[13] = {
    0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
    19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
    6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
    601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
    14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
    86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
    56906521.91347156388090791033559122686859};
__device__ const double LANCZOS_DENOM[13] = {
    1., 66., 1925., 32670., 357423., 2637558., 13339535., 45995730., 105258076., 150917976.,
    120543840., 39916800., 0.};
#define LANCZOS_G 6.024680040776729583740234375
#define IGAMMA_MAXITER 2000

__device__ __forceinline__ double sp_inf() { return pos_inf<double>(); }
__device__ __forceinline__ double sp_nan() { return pos_inf<double>() - pos_inf<double>(); }

// c[0] x^n + ... + c[n]
__device__ __forceinline__ double polevl(double x, const double* c, int n) {
    double r = c[0];
    for (int i = 1; i <= n; ++i) r = r * x + c[i];
    return r;
}

// x^n + c[0] x^(n-1) + ... + c[n-1] (an implied leading 1)
__device__ __forceinline__ double p1evl(double x, const double* c, int n) {
    double r = x + c[0];
    for (int i = 1; i < n; ++i) r = r * x + c[i];
    return r;
}

// a Chebyshev series of n terms at x in [-2, 2] (Clenshaw's recurrence, as in Cephes)
__device__ __forceinline__ double chbevl(double x, const double* c, int n) {
    double b0 = c[0], b1 = 0.0, b2 = 0.0;
    for (int i = 1; i < n; ++i) {
        b2 = b1;
        b1 = b0;
        b0 = x * b1 - b2 + c[i];
    }
    return 0.5 * (b0 - b2);
}

// torch's calc_erfinv: G. Pavlis' rational first guess, two Newton steps on erf(x) = y
__device__ double sp_erfinv(double y) {
    double ay = fabs(y), x, z;
    if (ay > 1.0) return sp_nan();
    if (ay == 1.0) return copysign(sp_inf(), y);
    if (ay <= 0.7) {
        z = y * y;
        x = y * (((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899) /
            ((((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1.0);
    } else {
        z = sqrt(-log((1.0 - ay) / 2.0));
        x = copysign(((1.641345311 * z + 3.429567803) * z - 1.624906493) * z - 1.970840454, y) /
            ((1.637067800 * z + 3.543889200) * z + 1.0);
    }
    x -= (erf(x) - y) / (2.0 * SP_SQRT_PI_INV * exp(-x * x));
    x -= (erf(x) - y) / (2.0 * SP_SQRT_PI_INV * exp(-x * x));
    return x;
}

__device__ double sp_i0e(double x) {
    x = fabs(x);
    if (x <= 8.0) return chbevl(x / 2.0 - 2.0, I0E_A, 30);
    return chbevl(32.0 / x - 2.0, I0E_B, 25) / sqrt(x);
}

// odd: computed for |x|, the sign put back
__device__ double sp_i1e(double x) {
    double ax = fabs(x);
    double r = ax <= 8.0 ? chbevl(ax / 2.0 - 2.0, I1E_A, 29) * ax
                         : chbevl(32.0 / ax - 2.0, I1E_B, 25) / sqrt(ax);
    return x < 0.0 ? -r : r;
}

// x with Phi(x) = y0 (Cephes ndtri): 0 and 1 give -inf and inf, outside [0, 1] NaN
__device__ double sp_ndtri(double y0) {
    if (y0 == 0.0) return -sp_inf();
    if (y0 == 1.0) return sp_inf();
    if (!(y0 > 0.0 && y0 < 1.0)) return sp_nan();
    double y = y0;
    bool negate = true;
    if (y > 1.0 - 0.13533528323661269189) {    // exp(-2): use the symmetric tail
        y = 1.0 - y;
        negate = false;
    }
    if (y > 0.13533528323661269189) {
        y -= 0.5;
        double z = y * y;
        return (y + y * (z * polevl(z, NDTRI_P0, 4) / p1evl(z, NDTRI_Q0, 8))) *
               2.50662827463100050242;
    }
    double x = sqrt(-2.0 * log(y));
    double x0 = x - log(x) / x;
    double z = 1.0 / x;
    x = x < 8.0 ? x0 - z * polevl(z, NDTRI_P1, 8) / p1evl(z, NDTRI_Q1, 8)
                : x0 - z * polevl(z, NDTRI_P2, 8) / p1evl(z, NDTRI_Q2, 8);
    return negate ? -x : x;
}

// exp(x * x) without the rounding of x * x (Cephes expx2): x = m + f, m a multiple of 1/128
__device__ double expx2(double x) {
    x = fabs(x);
    double m = floor(x * 128.0 + 0.5) / 128.0;
    double f = x - m;
    return exp(m * m) * exp(2.0 * m * f + f * f);
}

// exp(x^2) erfc(x): the product below 26, the Laplace continued fraction beyond (erfc
// underflows there); for x < 0, 2 exp(x^2) - erfcx(-x)
__device__ double sp_erfcx_positive(double x) {
    if (x < 26.0) return expx2(x) * erfc(x);
    double t = x;
    for (int k = 12; k > 0; --k) t = x + 0.5 * k / t;
    return SP_SQRT_PI_INV / t;
}

__device__ double sp_erfcx(double x) {
    if (x != x) return x;
    if (x >= 0.0) return sp_erfcx_positive(x);
    if (x < -26.7) return sp_inf();
    return 2.0 * expx2(x) - sp_erfcx_positive(-x);
}

// log Phi(x) as torch (SciPy): through erfcx below -1, where Phi underflows
__device__ double sp_log_ndtr(double x) {
    double t = x * 0.707106781186547524400844362104849039;
    if (x < -1.0) return log(sp_erfcx(-t) / 2.0) - t * t;
    return log1p(-erfc(t) / 2.0);
}

__device__ double sp_bessel_j0(double x) {
    x = fabs(x);
    if (x <= 5.0) {
        double z = x * x;
        if (x < 1e-5) return 1.0 - z / 4.0;
        return (z - 5.78318596294678452118E0) * (z - 3.04712623436620863991E1) *
               polevl(z, J0_RP, 3) / p1evl(z, J0_RQ, 8);
    }
    double w = 5.0 / x, z = w * w;
    double p = polevl(z, J0_PP, 6) / polevl(z, J0_PQ, 6);
    double q = polevl(z, J0_QP, 7) / p1evl(z, J0_QQ, 7);
    double xn = x - 0.785398163397448309615660845819875721;      // pi / 4
    return (p * cos(xn) - w * q * sin(xn)) * 0.797884560802865355879892119868763737 / sqrt(x);
}

// odd: computed for |x|, the sign put back
__device__ double sp_bessel_j1(double x) {
    double ax = fabs(x), r;
    if (ax <= 5.0) {
        double z = ax * ax;
        r = polevl(z, J1_RP, 3) / p1evl(z, J1_RQ, 8) * ax * (z - 1.46819706421238932572E1) *
            (z - 4.92184563216946036703E1);
    } else {
        double w = 5.0 / ax, z = w * w;
        double p = polevl(z, J1_PP, 6) / polevl(z, J1_PQ, 6);
        double q = polevl(z, J1_QP, 7) / p1evl(z, J1_QQ, 7);
        double xn = ax - 2.356194490192344928846982537459627163;   // 3 pi / 4
        r = (p * cos(xn) - w * q * sin(xn)) * 0.797884560802865355879892119868763737 / sqrt(ax);
    }
    return x < 0.0 ? -r : r;
}

// Hurwitz zeta (Cephes zeta.c, as torch): direct sum, then the Euler-Maclaurin tail
__device__ double sp_zeta(double x, double q) {
    if (x == 1.0) return sp_inf();
    if (x < 1.0) return sp_nan();
    if (q <= 0.0) {
        if (q == floor(q)) return sp_inf();
        if (x != floor(x)) return sp_nan();
    }
    double s = pow(q, -x), a = q, b = 0.0;
    int i = 0;
    while (i < 9 || a <= 9.0) {
        i += 1;
        a += 1.0;
        b = pow(a, -x);
        s += b;
        if (-SP_MACHEP * s < b && b < SP_MACHEP * s) return s;
    }
    double w = a, k = 0.0, t;
    s += b * w / (x - 1.0) - 0.5 * b;
    a = 1.0;
    for (i = 0; i < 12; ++i) {
        a *= x + k;
        b /= w;
        t = a * b / ZETA_A[i];
        s += t;
        if (fabs(t / s) < SP_MACHEP) return s;
        k += 1.0;
        a *= x + k;
        b /= w;
        k += 1.0;
    }
    return s;
}

// ratio of two degree-12 polynomials, in 1/x (coefficients reversed) for x > 1
__device__ double lanczos_sum_expg_scaled(double x) {
    double num = 0.0, den = 0.0;
    if (fabs(x) <= 1.0) {
        for (int i = 0; i < 13; ++i) {
            num = num * x + LANCZOS_NUM[i];
            den = den * x + LANCZOS_DENOM[i];
        }
    } else {
        double y = 1.0 / x;
        for (int i = 12; i >= 0; --i) {
            num = num * y + LANCZOS_NUM[i];
            den = den * y + LANCZOS_DENOM[i];
        }
    }
    return num / den;
}

// x^a e^-x / Gamma(a), the prefactor of both series (torch's _igam_helper_fac)
__device__ double igamma_factor(double a, double x) {
    if (fabs(a - x) > 0.4 * fabs(a)) {
        double ax = a * log(x) - x - lgamma(a);
        return ax < -7.09782712893383996843E2 ? 0.0 : exp(ax);
    }
    double fac = a + LANCZOS_G - 0.5;
    double res = sqrt(fac / 2.718281828459045) / lanczos_sum_expg_scaled(a);
    if (a < 200.0 && x < 200.0) return res * exp(a - x) * pow(x / fac, a);
    double num = (x - a - LANCZOS_G + 0.5) / fac;
    return res * exp(a * (log1p(num) - num) + x * (0.5 - LANCZOS_G) / fac);
}

// P(a, x) by its power series (DLMF 8.11.4)
__device__ double igamma_series(double a, double x) {
    double ax = igamma_factor(a, x);
    if (ax == 0.0) return 0.0;
    double r = a, c = 1.0, total = 1.0;
    for (int i = 0; i < IGAMMA_MAXITER; ++i) {
        r += 1.0;
        c *= x / r;
        total += c;
        if (c <= SP_MACHEP * total) break;
    }
    return total * ax / a;
}

// Q(a, x) for small x (DLMF 8.7.3), written to avoid cancellation
__device__ double igammac_series(double a, double x) {
    double fac = 1.0, total = 0.0;
    for (int n = 1; n < IGAMMA_MAXITER; ++n) {
        fac *= -x / n;
        double term = fac / (a + n);
        total += term;
        if (fabs(term) <= SP_MACHEP * fabs(total)) break;
    }
    double logx = log(x);
    return -expm1(a * logx - lgamma(1.0 + a)) - exp(a * logx - lgamma(a)) * total;
}

// Q(a, x) for x > 1.1, x >= a by its continued fraction (DLMF 8.9.2), rescaled when the
// convergents grow large
__device__ double igammac_fraction(double a, double x) {
    double ax = igamma_factor(a, x);
    if (ax == 0.0) return 0.0;
    double y = 1.0 - a, z = x + y + 1.0, c = 0.0;
    double pkm2 = 1.0, qkm2 = x, pkm1 = x + 1.0, qkm1 = z * x;
    double ans = pkm1 / qkm1;
    for (int i = 0; i < IGAMMA_MAXITER; ++i) {
        c += 1.0;
        y += 1.0;
        z += 2.0;
        double yc = y * c;
        double pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc, t = 1.0;
        if (qk != 0.0) {
            double r = pk / qk;
            t = fabs((ans - r) / r);
            ans = r;
        }
        pkm2 = pkm1;
        pkm1 = pk;
        qkm2 = qkm1;
        qkm1 = qk;
        if (fabs(pk) > 4.503599627370496e15) {
            pkm2 *= 2.0 * SP_MACHEP;
            pkm1 *= 2.0 * SP_MACHEP;
            qkm2 *= 2.0 * SP_MACHEP;
            qkm1 *= 2.0 * SP_MACHEP;
        }
        if (t <= SP_MACHEP) break;
    }
    return ans * ax;
}

// torch's (SciPy's) values at the edges of the domain (NaN where it is not one); true when
// (a, x) is inside it
__device__ bool igamma_edge(double a, double x, bool upper, double& value) {
    if (x > 0.0 && a > 0.0 && x < sp_inf() && a < sp_inf()) return false;
    if (x != x || a != a) {
        value = x + a;
    } else if (x < 0.0 || a < 0.0 || (a == 0.0 && !(x > 0.0)) ||
               (a == sp_inf() && x == sp_inf())) {
        value = sp_nan();
    } else {
        double lower = (a == 0.0 || x == sp_inf()) ? 1.0 : 0.0;
        value = upper ? 1.0 - lower : lower;
    }
    return true;
}

// Q(a, x) as torch's calc_igammac picks its method, less the uniform asymptotic expansion for
// large a ~ x (the series and the fraction still converge there)
__device__ double sp_igammac(double a, double x) {
    double edge;
    if (igamma_edge(a, x, true, edge)) return edge;
    if (x > 1.1) return x < a ? 1.0 - igamma_series(a, x) : igammac_fraction(a, x);
    if ((x <= 0.5 && -0.4 / log(x) < a) || (x > 0.5 && x * 1.1 < a))
        return 1.0 - igamma_series(a, x);
    return igammac_series(a, x);
}

__device__ double sp_igamma(double a, double x) {
    double edge;
    if (igamma_edge(a, x, false, edge)) return edge;
    if (x > 1.0 && x > a) return 1.0 - sp_igammac(a, x);
    return igamma_series(a, x);
}

// Euclid on |x|, |y| (|INT64_MIN| wraps to itself, as in torch)
__device__ __forceinline__ i64 gcd_of(i64 x, i64 y) {
    x = x < 0 ? (i64)(0ull - (u64)x) : x;
    y = y < 0 ? (i64)(0ull - (u64)y) : y;
    while (x != 0) {
        i64 t = x;
        x = y % x;
        y = t;
    }
    return y;
}

// |x / gcd * y|, 0 when both are 0; the product wraps like torch's
__device__ __forceinline__ i64 lcm_of(i64 x, i64 y) {
    i64 g = gcd_of(x, y);
    if (g == 0) return 0;
    i64 r = (i64)((u64)(x / g) * (u64)y);
    return r < 0 ? (i64)(0ull - (u64)r) : r;
}

template <typename T> __device__ __forceinline__ T xlog1py_of(T x, T y) {
    if (y != y) return y;                   // NaN y wins even over x == 0
    return x == T(0) ? T(0) : x * m_log1p(y);
}

template <typename T, int OP> __device__ __forceinline__ T unary_value(T x) {
    if constexpr (is_float_type<T>::value) {
        if constexpr (OP == UNARY_IDENTITY) return x;
        else if constexpr (OP == UNARY_NEG) return -x;
        else if constexpr (OP == UNARY_ABS) return m_fabs(x);
        else if constexpr (OP == UNARY_SIGN) return T(x > T(0)) - T(x < T(0));   // sign(NaN) = 0
        else if constexpr (OP == UNARY_EXP) return m_exp(x);
        else if constexpr (OP == UNARY_LOG) return m_log(x);
        else if constexpr (OP == UNARY_LOG1P) return m_log1p(x);
        else if constexpr (OP == UNARY_EXPM1) return m_expm1(x);
        else if constexpr (OP == UNARY_SQRT) return m_sqrt(x);
        else if constexpr (OP == UNARY_RSQRT) return T(1) / m_sqrt(x);
        else if constexpr (OP == UNARY_SIN) return m_sin(x);
        else if constexpr (OP == UNARY_COS) return m_cos(x);
        else if constexpr (OP == UNARY_TANH) return m_tanh(x);
        else if constexpr (OP == UNARY_SIGMOID) return sigmoid_of(x);
        else if constexpr (OP == UNARY_RELU) return x < T(0) ? T(0) : x;         // NaN passes
        else if constexpr (OP == UNARY_RECIPROCAL) return T(1) / x;
        else if constexpr (OP == UNARY_SQUARE) return x * x;
        else if constexpr (OP == UNARY_FLOOR) return m_floor(x);
        else if constexpr (OP == UNARY_CEIL) return m_ceil(x);
        else if constexpr (OP == UNARY_ROUND) return m_rint(x);                   // half to even
        else if constexpr (OP == UNARY_TRUNC) return m_trunc(x);
        else if constexpr (OP == UNARY_ERF) return m_erf(x);
        else if constexpr (OP == UNARY_SINH) return m_sinh(x);
        else if constexpr (OP == UNARY_COSH) return m_cosh(x);
        else if constexpr (OP == UNARY_TAN) return m_tan(x);
        else if constexpr (OP == UNARY_ASIN) return m_asin(x);
        else if constexpr (OP == UNARY_ACOS) return m_acos(x);
        else if constexpr (OP == UNARY_ATAN) return m_atan(x);
        else if constexpr (OP == UNARY_ASINH) return m_asinh(x);
        else if constexpr (OP == UNARY_ACOSH) return m_acosh(x);
        else if constexpr (OP == UNARY_ATANH) return m_atanh(x);
        else if constexpr (OP == UNARY_LOG2) return m_log2(x);
        else if constexpr (OP == UNARY_LOG10) return m_log10(x);
        else if constexpr (OP == UNARY_EXP2) return m_exp2(x);
        else if constexpr (OP == UNARY_ERFC) return m_erfc(x);
        else if constexpr (OP == UNARY_LGAMMA) return m_lgamma(x);
        else if constexpr (OP == UNARY_DIGAMMA) return digamma_of(x);
        else if constexpr (OP == UNARY_TRIGAMMA) return trigamma_of(x);
        else if constexpr (OP == UNARY_FRAC) return x - m_trunc(x);           // inf: NaN
        else if constexpr (OP == UNARY_ERFINV) return T(sp_erfinv(x));
        else if constexpr (OP == UNARY_I0) return T(exp(fabs((double)x)) * sp_i0e(x));
        else if constexpr (OP == UNARY_I0E) return T(sp_i0e(x));
        else if constexpr (OP == UNARY_I1) return T(exp(fabs((double)x)) * sp_i1e(x));
        else if constexpr (OP == UNARY_I1E) return T(sp_i1e(x));
        else if constexpr (OP == UNARY_NDTRI) return T(sp_ndtri(x));
        else if constexpr (OP == UNARY_LOG_NDTR) return T(sp_log_ndtr(x));
        else if constexpr (OP == UNARY_ERFCX) return T(sp_erfcx(x));
        else if constexpr (OP == UNARY_BESSEL_J0) return T(sp_bessel_j0(x));
        else if constexpr (OP == UNARY_BESSEL_J1) return T(sp_bessel_j1(x));
        else return x;
    } else if constexpr (same_type<T, i64>::value) {
        // integer arithmetic wraps: done in uint64, where overflow is defined
        if constexpr (OP == UNARY_NEG) return (i64)(0ull - (u64)x);
        else if constexpr (OP == UNARY_ABS) return x < 0 ? (i64)(0ull - (u64)x) : x;
        else if constexpr (OP == UNARY_SIGN) return (i64)(x > 0) - (i64)(x < 0);
        else if constexpr (OP == UNARY_SQUARE) return (i64)((u64)x * (u64)x);
        else if constexpr (OP == UNARY_RELU) return x < 0 ? 0 : x;
        else if constexpr (OP == UNARY_BITWISE_NOT) return ~x;
        else return x;
    } else {
        return x;   // bool: IDENTITY only (the host refuses the rest)
    }
}

template <int OP> struct is_unary_predicate {
    static constexpr bool value = OP == UNARY_LOGICAL_NOT || OP == UNARY_ISNAN ||
                                  OP == UNARY_ISINF || OP == UNARY_ISFINITE;
};

template <typename T, int OP> __device__ __forceinline__ unsigned char unary_predicate(T x) {
    if constexpr (OP == UNARY_LOGICAL_NOT) return x == T(0);
    else if constexpr (OP == UNARY_ISNAN) return x != x;
    else if constexpr (OP == UNARY_ISINF) {
        if constexpr (is_float_type<T>::value) return m_fabs(x) == pos_inf<T>();
        else return 0;
    } else return (x - x) == T(0);      // ISFINITE: inf - inf and NaN - NaN are NaN
}

// Apply OP to a thread's loaded items (kept as a loop: one copy of each op's code).
template <typename T, int OP>
__device__ __forceinline__ void unary_apply(const T (&x)[ITEMS], void* out, i64 base, i64 n) {
#pragma unroll 1
    for (int k = 0; k < ITEMS; ++k) {
        i64 i = ITEM(base, k);
        if (i >= n) break;
        if constexpr (is_unary_predicate<OP>::value) {
            static_cast<unsigned char*>(out)[i] = unary_predicate<T, OP>(x[k]);
        } else {
            static_cast<T*>(out)[i] = unary_value<T, OP>(x[k]);
        }
    }
}

#define UNARY_CASE(OP) case OP: unary_apply<T, OP>(x, out, base, n); break;

// The loads are issued once (all ITEMS in flight), then the op is picked by a uniform switch.
template <typename T>
__global__ void __launch_bounds__(THREADS)
unary_kernel(int op, const T* __restrict__ a, void* out, i64 n) {
    FOR_EACH_CHUNK(base, n) {
        T x[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            i64 i = ITEM(base, k);
            x[k] = i < n ? a[i] : T(0);
        }
        switch (op) {
            UNARY_CASE(UNARY_IDENTITY) UNARY_CASE(UNARY_NEG) UNARY_CASE(UNARY_ABS)
            UNARY_CASE(UNARY_SIGN) UNARY_CASE(UNARY_EXP) UNARY_CASE(UNARY_LOG)
            UNARY_CASE(UNARY_LOG1P) UNARY_CASE(UNARY_EXPM1) UNARY_CASE(UNARY_SQRT)
            UNARY_CASE(UNARY_RSQRT) UNARY_CASE(UNARY_SIN) UNARY_CASE(UNARY_COS)
            UNARY_CASE(UNARY_TANH) UNARY_CASE(UNARY_SIGMOID) UNARY_CASE(UNARY_RELU)
            UNARY_CASE(UNARY_RECIPROCAL) UNARY_CASE(UNARY_SQUARE) UNARY_CASE(UNARY_FLOOR)
            UNARY_CASE(UNARY_CEIL) UNARY_CASE(UNARY_ROUND) UNARY_CASE(UNARY_TRUNC)
            UNARY_CASE(UNARY_ERF) UNARY_CASE(UNARY_LOGICAL_NOT) UNARY_CASE(UNARY_ISNAN)
            UNARY_CASE(UNARY_ISINF) UNARY_CASE(UNARY_ISFINITE) UNARY_CASE(UNARY_BITWISE_NOT)
            UNARY_CASE(UNARY_SINH) UNARY_CASE(UNARY_COSH) UNARY_CASE(UNARY_TAN)
            UNARY_CASE(UNARY_ASIN) UNARY_CASE(UNARY_ACOS) UNARY_CASE(UNARY_ATAN)
            UNARY_CASE(UNARY_ASINH) UNARY_CASE(UNARY_ACOSH) UNARY_CASE(UNARY_ATANH)
            UNARY_CASE(UNARY_LOG2) UNARY_CASE(UNARY_LOG10) UNARY_CASE(UNARY_EXP2)
            UNARY_CASE(UNARY_ERFC) UNARY_CASE(UNARY_LGAMMA) UNARY_CASE(UNARY_DIGAMMA)
            UNARY_CASE(UNARY_TRIGAMMA) UNARY_CASE(UNARY_FRAC) UNARY_CASE(UNARY_ERFINV)
            UNARY_CASE(UNARY_I0) UNARY_CASE(UNARY_I0E) UNARY_CASE(UNARY_I1) UNARY_CASE(UNARY_I1E)
            UNARY_CASE(UNARY_NDTRI) UNARY_CASE(UNARY_LOG_NDTR) UNARY_CASE(UNARY_ERFCX)
            UNARY_CASE(UNARY_BESSEL_J0) UNARY_CASE(UNARY_BESSEL_J1)
            default: break;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// binary

template <typename T> __device__ __forceinline__ T floordiv_real(T x, T y) {
    // floor(x / y) computed like Python/numpy/torch (via fmod, exact at the boundaries)
    if (y == T(0)) return x / y;
    T mod = m_fmod(x, y);
    T div = (x - mod) / y;
    if (mod != T(0) && ((y < T(0)) != (mod < T(0)))) div -= T(1);
    if (div != T(0)) {
        T fl = m_floor(div);
        if (div - fl > T(0.5)) fl += T(1);
        return fl;
    }
    return m_copysign(T(0), x / y);
}

template <typename T> __device__ __forceinline__ T remainder_real(T x, T y) {
    // Python-style modulo: the result takes the divisor's sign (torch.remainder); a zero
    // keeps fmod's sign (the dividend's), as in torch
    T mod = m_fmod(x, y);
    if (mod != T(0) && (y < T(0)) != (mod < T(0))) mod += y;
    return mod;
}

__device__ __forceinline__ i64 floordiv_int(i64 x, i64 y, int& err) {
    if (y == 0) { err |= ERR_ZERO_DIV; return 0; }
    if (y == -1) return (i64)(0ull - (u64)x);       // INT64_MIN // -1 wraps like numpy
    i64 q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) q -= 1;
    return q;
}

__device__ __forceinline__ i64 remainder_int(i64 x, i64 y, int& err) {
    if (y == 0) { err |= ERR_ZERO_DIV; return 0; }
    if (y == -1) return 0;
    i64 r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

__device__ __forceinline__ i64 pow_int(i64 x, i64 y, int& err) {
    // by squaring, wrapping on overflow; negative exponents are an error (torch)
    if (y < 0) { err |= ERR_NEG_POW; return 0; }
    u64 base = (u64)x, result = 1;
    while (y) {
        if (y & 1) result *= base;
        base *= base;
        y >>= 1;
    }
    return (i64)result;
}

// logaddexp / logaddexp2 as torch computes them: max + log1p(e^-|x - y|) (base 2: log1p of
// 2^-|x - y|, over ln 2); equal infinities are returned as they are (inf - inf would be NaN)
template <typename T> __device__ __forceinline__ T logaddexp_of(T x, T y, bool base2) {
    if (x == y && m_fabs(x) == pos_inf<T>()) return x;
    T big = x < y ? y : x;
    T diff = -m_fabs(x - y);
    if (!base2) return big + m_log1p(m_exp(diff));
    return big + m_log1p(m_exp2(diff)) * T(1.0 / 0.693147180559945309417232121458176568);
}

template <typename T> __device__ __forceinline__ T xlogy_of(T x, T y) {
    if (y != y) return y;                   // NaN y wins even over x == 0
    return x == T(0) ? T(0) : x * m_log(y);
}

template <typename T, int OP> __device__ __forceinline__ T arith(T x, T y, int& err) {
    if constexpr (OP == BINARY_ADD) {
        if constexpr (same_type<T, unsigned char>::value) return (x | y) != 0;
        else if constexpr (same_type<T, i64>::value) return (i64)((u64)x + (u64)y);
        else return x + y;
    } else if constexpr (OP == BINARY_SUB) {
        if constexpr (same_type<T, i64>::value) return (i64)((u64)x - (u64)y);
        else return x - y;
    } else if constexpr (OP == BINARY_MUL) {
        if constexpr (same_type<T, unsigned char>::value) return (x != 0) & (y != 0);
        else if constexpr (same_type<T, i64>::value) return (i64)((u64)x * (u64)y);
        else return x * y;
    } else if constexpr (OP == BINARY_MAXIMUM) {       // a NaN on either side wins; ties keep x
        return (x < y) | (y != y) ? y : x;
    } else if constexpr (OP == BINARY_MINIMUM) {
        return (y < x) | (y != y) ? y : x;
    } else if constexpr (OP == BINARY_RELU_BACKWARD) {   // a NaN output passes g, as in torch
        return y <= T(0) ? T(0) : x;
    } else if constexpr (OP == BINARY_HEAVISIDE) {
        return x == T(0) ? y : T(x > T(0));     // NaN > 0 is false: heaviside(NaN) = 0
    } else if constexpr (is_float_type<T>::value) {
        if constexpr (OP == BINARY_DIV) return x / y;
        else if constexpr (OP == BINARY_POW) return m_pow(x, y);
        else if constexpr (OP == BINARY_FLOOR_DIVIDE) return floordiv_real(x, y);
        else if constexpr (OP == BINARY_REMAINDER) return remainder_real(x, y);
        else if constexpr (OP == BINARY_ATAN2) return m_atan2(x, y);
        else if constexpr (OP == BINARY_TANH_BACKWARD) return x * (T(1) - y * y);
        else if constexpr (OP == BINARY_SIGMOID_BACKWARD) return x * y * (T(1) - y);
        else if constexpr (OP == BINARY_HYPOT) return m_hypot(x, y);
        else if constexpr (OP == BINARY_LOGADDEXP) return logaddexp_of(x, y, false);
        else if constexpr (OP == BINARY_LOGADDEXP2) return logaddexp_of(x, y, true);
        else if constexpr (OP == BINARY_COPYSIGN) return m_copysign(x, y);
        else if constexpr (OP == BINARY_XLOGY) return xlogy_of(x, y);
        else if constexpr (OP == BINARY_NEXTAFTER) return m_nextafter(x, y);
        else if constexpr (OP == BINARY_ZETA) return T(sp_zeta(x, y));
        else if constexpr (OP == BINARY_IGAMMA) return T(sp_igamma(x, y));
        else if constexpr (OP == BINARY_IGAMMAC) return T(sp_igammac(x, y));
        else if constexpr (OP == BINARY_XLOG1PY) return xlog1py_of(x, y);
        else return T(0);
    } else if constexpr (same_type<T, i64>::value) {
        if constexpr (OP == BINARY_POW) return pow_int(x, y, err);
        else if constexpr (OP == BINARY_FLOOR_DIVIDE) return floordiv_int(x, y, err);
        else if constexpr (OP == BINARY_REMAINDER) return remainder_int(x, y, err);
        else if constexpr (OP == BINARY_BITWISE_AND) return x & y;
        else if constexpr (OP == BINARY_BITWISE_OR) return x | y;
        else if constexpr (OP == BINARY_BITWISE_XOR) return x ^ y;
        // shifts by a negative amount or by 64 or more: torch's 0 for <<, sign fill for >>
        else if constexpr (OP == BINARY_LEFT_SHIFT) return 0 <= y && y < 64 ? (i64)((u64)x << y) : 0;
        else if constexpr (OP == BINARY_RIGHT_SHIFT) return 0 <= y && y < 64 ? x >> y : x >> 63;
        else if constexpr (OP == BINARY_GCD) return gcd_of(x, y);
        else if constexpr (OP == BINARY_LCM) return lcm_of(x, y);
        else return 0;
    } else {
        return 0;   // combinations the host refuses
    }
}

template <typename T, int OP> __device__ __forceinline__ unsigned char predicate(T x, T y) {
    // comparisons and logical ops (NaN is truthy, as in torch)
    if constexpr (OP == BINARY_EQ) return x == y;
    else if constexpr (OP == BINARY_NE) return x != y;
    else if constexpr (OP == BINARY_LT) return x < y;
    else if constexpr (OP == BINARY_LE) return x <= y;
    else if constexpr (OP == BINARY_GT) return x > y;
    else if constexpr (OP == BINARY_GE) return x >= y;
    else if constexpr (OP == BINARY_LOGICAL_AND) return (x != T(0)) & (y != T(0));
    else if constexpr (OP == BINARY_LOGICAL_OR) return (x != T(0)) | (y != T(0));
    else return (x != T(0)) ^ (y != T(0));
}

template <typename T, int OP> struct is_predicate {
    static constexpr bool value = OP >= BINARY_EQ && OP <= BINARY_LOGICAL_XOR;
};

template <typename T, int OP>
__device__ __forceinline__ int binary_apply(const T (&x)[ITEMS], const T (&y)[ITEMS], void* out,
                                            i64 base, i64 n) {
    int err = 0;
#pragma unroll 1
    for (int k = 0; k < ITEMS; ++k) {
        i64 i = ITEM(base, k);
        if (i >= n) break;
        if constexpr (is_predicate<T, OP>::value) {
            static_cast<unsigned char*>(out)[i] = predicate<T, OP>(x[k], y[k]);
        } else {
            static_cast<T*>(out)[i] = arith<T, OP>(x[k], y[k], err);
        }
    }
    return err;
}

#define BINARY_CASE(OP) case OP: err |= binary_apply<T, OP>(x, y, out, base, n); break;

// a and b are read at a_off / b_off plus their view offsets; err may be null unless the op is
// an integer floor_divide / remainder / pow (the only ops that can fail).
template <typename T, int MAXD>
__global__ void __launch_bounds__(THREADS)
binary_kernel(int op, const T* __restrict__ a, i64 a_off, const T* __restrict__ b, i64 b_off,
              void* out, i64 n, Geometry<2, MAXD> g, int* err_flag) {
    int err = 0;
    FOR_EACH_CHUNK(base, n) {
        T x[ITEMS], y[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            i64 i = ITEM(base, k);
            i64 off[2] = {0, 0};
            if (i < n) geometry_offsets(g, (u64)i, off);
            x[k] = i < n ? a[a_off + off[0]] : T(0);
            y[k] = i < n ? b[b_off + off[1]] : T(0);
        }
        switch (op) {
            BINARY_CASE(BINARY_ADD) BINARY_CASE(BINARY_SUB) BINARY_CASE(BINARY_MUL)
            BINARY_CASE(BINARY_DIV) BINARY_CASE(BINARY_POW) BINARY_CASE(BINARY_MAXIMUM)
            BINARY_CASE(BINARY_MINIMUM) BINARY_CASE(BINARY_FLOOR_DIVIDE)
            BINARY_CASE(BINARY_REMAINDER) BINARY_CASE(BINARY_ATAN2) BINARY_CASE(BINARY_EQ)
            BINARY_CASE(BINARY_NE) BINARY_CASE(BINARY_LT) BINARY_CASE(BINARY_LE)
            BINARY_CASE(BINARY_GT) BINARY_CASE(BINARY_GE) BINARY_CASE(BINARY_LOGICAL_AND)
            BINARY_CASE(BINARY_LOGICAL_OR) BINARY_CASE(BINARY_LOGICAL_XOR)
            BINARY_CASE(BINARY_RELU_BACKWARD) BINARY_CASE(BINARY_TANH_BACKWARD)
            BINARY_CASE(BINARY_SIGMOID_BACKWARD) BINARY_CASE(BINARY_BITWISE_AND)
            BINARY_CASE(BINARY_BITWISE_OR) BINARY_CASE(BINARY_BITWISE_XOR)
            BINARY_CASE(BINARY_LEFT_SHIFT) BINARY_CASE(BINARY_RIGHT_SHIFT)
            BINARY_CASE(BINARY_HYPOT) BINARY_CASE(BINARY_LOGADDEXP) BINARY_CASE(BINARY_LOGADDEXP2)
            BINARY_CASE(BINARY_COPYSIGN) BINARY_CASE(BINARY_HEAVISIDE) BINARY_CASE(BINARY_XLOGY)
            BINARY_CASE(BINARY_GCD) BINARY_CASE(BINARY_LCM) BINARY_CASE(BINARY_NEXTAFTER)
            BINARY_CASE(BINARY_ZETA) BINARY_CASE(BINARY_IGAMMA) BINARY_CASE(BINARY_IGAMMAC)
            BINARY_CASE(BINARY_XLOG1PY)
            default: break;
        }
    }
    if (err && err_flag) atomicOr(err_flag, err);
}

// ---------------------------------------------------------------------------------------------
// where: out = a if cond else b (a pure select; operands 0, 1, 2 of g are cond, a, b)

template <typename T, int MAXD>
__global__ void __launch_bounds__(THREADS)
where_kernel(const unsigned char* __restrict__ cond, i64 c_off, const T* __restrict__ a,
             i64 a_off, const T* __restrict__ b, i64 b_off, T* __restrict__ out, i64 n,
             Geometry<3, MAXD> g) {
    FOR_EACH_ELEMENT(i, n) {
        i64 off[3];
        geometry_offsets(g, (u64)i, off);
        out[i] = cond[c_off + off[0]] ? a[a_off + off[1]] : b[b_off + off[2]];
    }
}

// ---------------------------------------------------------------------------------------------
// softmax rows (see minitorch/_cpu/elementwise.pyx): softmax / log_softmax of each length-n row
// of a compact (rows, n) array and their input gradients, one warp per row: lanes stride along
// the row (coalesced), shuffles combine the row's max and sums.

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1) v += __shfl_xor_sync(0xffffffffu, v, delta);
    return v;
}

// max over the warp; a NaN anywhere wins (torch's max, and then the whole row is NaN)
template <typename T> __device__ __forceinline__ T warp_max(T v) {
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1) {
        T other = __shfl_xor_sync(0xffffffffu, v, delta);
        v = (other > v || other != other) ? other : v;
    }
    return v;
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
softmax_rows_kernel(const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n, int log) {
    const int lane = threadIdx.x & 31;
    // row is uniform across a warp, so the shuffles below always see all 32 lanes
    for (i64 row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows;
         row += (i64)gridDim.x * (blockDim.x / 32)) {
    const T* x = a + row * n;
    T* y = out + row * n;
    T peak = -pos_inf<T>();
    for (i64 j = lane; j < n; j += 32) {
        T v = x[j];
        peak = (v > peak || v != v) ? v : peak;
    }
    peak = warp_max(peak);
    T total = T(0);
    for (i64 j = lane; j < n; j += 32) total += m_exp(x[j] - peak);
    total = warp_sum(total);
    if (log) {
        const T log_total = m_log(total);
        for (i64 j = lane; j < n; j += 32) y[j] = (x[j] - peak) - log_total;
    } else {
        for (i64 j = lane; j < n; j += 32) y[j] = m_exp(x[j] - peak) / total;
    }
    }
}

// softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g)
template <typename T>
__global__ void __launch_bounds__(THREADS)
softmax_backward_rows_kernel(const T* __restrict__ g, const T* __restrict__ y, T* __restrict__ out,
                             i64 rows, i64 n, int log) {
    const int lane = threadIdx.x & 31;
    for (i64 row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows;
         row += (i64)gridDim.x * (blockDim.x / 32)) {
    const T* gr = g + row * n;
    const T* yr = y + row * n;
    T* o = out + row * n;
    T total = T(0);
    for (i64 j = lane; j < n; j += 32) total += log ? gr[j] : gr[j] * yr[j];
    total = warp_sum(total);
    for (i64 j = lane; j < n; j += 32)
        o[j] = log ? gr[j] - m_exp(yr[j]) * total : (gr[j] - total) * yr[j];
    }
}

// ---------------------------------------------------------------------------------------------
// fused Adam update (see adam_step in minitorch/_cpu/elementwise.pyx): torch's single-tensor
// Adam operation for operation, every scalar rounded to T first as separate tensor ops would.
// max_v is null unless amsgrad.

template <typename T>
__global__ void __launch_bounds__(THREADS)
adam_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v,
            T* __restrict__ max_v, i64 n, T grad_scale, T param_scale, T grad_decay, T w1, T beta2,
            T c2, T eps, T bc2_sqrt, T neg_step) {
    FOR_EACH_ELEMENT(i, n) {
        T pi = p[i] * param_scale;                      // decoupled weight decay (AdamW)
        T gi = g[i] * grad_scale;                       // maximize: the negated gradient
        if (grad_decay != T(0)) gi = gi + grad_decay * p[i];    // L2 weight decay
        T mi = m[i];
        mi = w1 < T(0.5) ? mi + w1 * (gi - mi) : gi - (gi - mi) * (T(1) - w1);   // lerp
        T vi = v[i] * beta2 + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        if (max_v) {                                    // amsgrad: a NaN on either side wins
            T top = max_v[i];
            if (top > vi || top != top) vi = top;
            max_v[i] = vi;
        }
        p[i] = pi + neg_step * (mi / (m_sqrt(vi) / bc2_sqrt + eps));
    }
}
