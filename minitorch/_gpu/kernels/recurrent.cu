// One time step of a recurrent layer (RNN tanh / relu, LSTM, GRU), forward and backward: the gate
// nonlinearities and the state update in one launch per step (the CPU twins, and the layout of
// every buffer, are in minitorch/_cpu/recurrent.pyx). One thread per (row, hidden unit) of the
// step; `mode` is uniform over the launch (0 tanh, 1 relu, 2 LSTM, 3 GRU).
#include "common.cuh"

MATH1(exp) MATH1(tanh)

template <typename T> __device__ __forceinline__ T rnn_sigmoid(T x) {
    // 1/(1+e^-x) through e = e^-|x|, so the exponential never overflows
    T e = m_exp(x > T(0) ? -x : x);
    T s = T(1) / (T(1) + e);
    return x >= T(0) ? s : e * s;
}

// gi (total, G·H) at row0; gh (rows, G·H); bias (G·H) or null; h, cell (LSTM; rows used, H)
// updated in place; act (total, A·H), hprev / cell_prev (total, H), out (total, H) written at row0.
template <typename T>
__global__ void __launch_bounds__(THREADS)
recurrent_forward_kernel(int mode, const T* __restrict__ gi, const T* __restrict__ gh,
                         const T* __restrict__ bias, T* __restrict__ h, T* __restrict__ cell,
                         T* __restrict__ act, T* __restrict__ hprev, T* __restrict__ cell_prev,
                         T* __restrict__ out, i64 row0, i64 rows, i64 H) {
    const int G = mode == 2 ? 4 : (mode == 3 ? 3 : 1), A = mode >= 2 ? 4 : 1;
    FOR_EACH_ELEMENT(e, rows * H) {
        const i64 r = e / H, j = e % H, row = row0 + r;
        const T* x = gi + row * G * H + j;
        const T* y = gh + r * G * H + j;
        T* saved = act + row * A * H + j;
        T hp = h[e];
        T hn;
        if (mode == 2) {
            T pre[4];
            for (int k = 0; k < 4; ++k) pre[k] = x[k * H] + (y[k * H] + (bias ? bias[k * H + j] : T(0)));
            T i = rnn_sigmoid(pre[0]), f = rnn_sigmoid(pre[1]), g = m_tanh(pre[2]);
            T o = rnn_sigmoid(pre[3]);
            T cp = cell[e], cn = f * cp + i * g;
            hn = o * m_tanh(cn);
            saved[0] = i; saved[H] = f; saved[2 * H] = g; saved[3 * H] = o;
            cell_prev[row * H + j] = cp;
            cell[e] = cn;
        } else if (mode == 3) {
            T hn_gate = y[2 * H] + (bias ? bias[2 * H + j] : T(0));
            T rr = rnn_sigmoid(x[0] + (y[0] + (bias ? bias[j] : T(0))));
            T z = rnn_sigmoid(x[H] + (y[H] + (bias ? bias[H + j] : T(0))));
            T n = m_tanh(x[2 * H] + rr * hn_gate);
            hn = n + z * (hp - n);
            saved[0] = rr; saved[H] = z; saved[2 * H] = n; saved[3 * H] = hn_gate;
        } else {
            T pre = x[0] + (y[0] + (bias ? bias[j] : T(0)));
            hn = mode == 0 ? m_tanh(pre) : (pre < T(0) ? T(0) : pre);   // relu: NaN passes
            saved[0] = hn;
        }
        hprev[row * H + j] = hp;
        h[e] = hn;
        out[row * H + j] = hn;
    }
}

// dout (total, H) at row0; dh, carry (rows used, H); act / hprev / cell_prev as saved forward;
// dgi (and the GRU's dgh) (total, G·H) written at row0; carry updated (LSTM dc, GRU dh ⊙ z).
template <typename T>
__global__ void __launch_bounds__(THREADS)
recurrent_backward_kernel(int mode, const T* __restrict__ dout, const T* __restrict__ dh,
                          T* __restrict__ carry, const T* __restrict__ act,
                          const T* __restrict__ hprev, const T* __restrict__ cell_prev,
                          T* __restrict__ dgi, T* __restrict__ dgh, i64 row0, i64 rows, i64 H) {
    const int G = mode == 2 ? 4 : (mode == 3 ? 3 : 1), A = mode >= 2 ? 4 : 1;
    FOR_EACH_ELEMENT(e, rows * H) {
        const i64 r = e / H, j = e % H, row = row0 + r;
        const T* saved = act + row * A * H + j;
        T* d = dgi + row * G * H + j;
        T g = dh[e] + dout[row * H + j];
        if (mode == 2) {
            T i = saved[0], f = saved[H], cg = saved[2 * H], o = saved[3 * H];
            T cp = cell_prev[row * H + j];
            T tc = m_tanh(f * cp + i * cg);
            T dc = carry[e] + g * o * (T(1) - tc * tc);
            carry[e] = dc * f;
            d[0] = dc * cg * i * (T(1) - i);
            d[H] = dc * cp * f * (T(1) - f);
            d[2 * H] = dc * i * (T(1) - cg * cg);
            d[3 * H] = g * tc * o * (T(1) - o);
        } else if (mode == 3) {
            g = g + carry[e];
            T rr = saved[0], z = saved[H], n = saved[2 * H], hn = saved[3 * H];
            carry[e] = g * z;
            T dn = g * (T(1) - z) * (T(1) - n * n);
            T dz = g * (hprev[row * H + j] - n) * z * (T(1) - z);
            T dr = dn * hn * rr * (T(1) - rr);
            T* dhid = dgh + row * G * H + j;
            d[0] = dr; d[H] = dz; d[2 * H] = dn;
            dhid[0] = dr; dhid[H] = dz; dhid[2 * H] = dn * rr;
        } else {
            T y = saved[0];
            d[0] = mode == 0 ? g * (T(1) - y * y) : (y > T(0) ? g : T(0));
        }
    }
}
