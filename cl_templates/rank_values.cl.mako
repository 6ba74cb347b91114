/* Medians and quantiles from the rank select's thresholds (rank_select.cl.mako): one work-item
   per (quantile, row) computes numpy's result from the keys of the ranks it reads, with numpy's
   arithmetic in the result's type: each operation of numpy's median (the mean of the middle
   keys) or of its quantile interpolation (_lerp), rounded as numpy rounds it. float16 and
   bfloat16 operations are float32 ones rounded to the type (as numpy's float16 loops and
   ml_dtypes compute); no operation is contracted into a fused multiply-add.

     rs_values - per (row, quantile): NaN where numpy gives NaN (a NaN key in the row; with
                 skip_nan, a row without a key that is not NaN), else the median or quantile

   The row states are the selection's last (copy `final_copy`: its digits' parity), so that one
   program serves every digit width (the host renders it with digits of 8 bits and index_t
   uint, which it does not use). Parameters: those of rank_select_steps.mako's prelude, and op
   ("median" or "quantile"), res (the result: "key" for the key of a rank itself, numpy's
   discrete methods; "f16", "bf16", "f32" or "f64" for the arithmetic's type). */
<%namespace name="steps" file="rank_select_steps.mako"/>
${steps.prelude()}
<%
    W = "double" if res == "f64" else "float"   # the arithmetic's C type
    RES_T = {"key": key_t, "f16": "ushort", "bf16": "ushort", "f32": "float", "f64": "double"}[res]
    assert res != "f64" or fp64, "float64 results need cl_khr_fp64"
    key_half = key_kind == "float" and key_bits == 16
    key_bf16 = key_half and key_inf_bits == 0x7F80
    signed = {"uchar": "char", "ushort": "short", "uint": "int", "ulong": "long"}[key_t]
%>
#define RES_T ${RES_T}

/* float32 to float16 and bfloat16 bits, rounding to nearest even (NaN: a quiet NaN), and back */
static inline ushort f32_to_f16(float f)
{
    const uint x = as_uint(f);
    const uint sign = (x >> 16) & 0x8000u;
    const uint mag = x & 0x7FFFFFFFu;
    if (mag >= 0x7F800000u)
        return (ushort)(sign | (mag > 0x7F800000u ? 0x7E00u : 0x7C00u));
    if (mag >= 0x477FF000u)   /* from 65520, halfway past the largest half: infinity */
        return (ushort)(sign | 0x7C00u);
    if (mag <= 0x33000000u)   /* up to 2^-25, halfway to the smallest subnormal: zero */
        return (ushort)sign;
    if (mag < 0x38800000u) {  /* a subnormal half: units of 2^-24 */
        const uint shift = 126u - (mag >> 23);
        const uint m = (mag & 0x7FFFFFu) | 0x800000u;
        uint r = m >> shift;
        const uint rem = m & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
        r += rem > mid || (rem == mid && (r & 1u));
        return (ushort)(sign | r);
    }
    uint r = (mag - 0x38000000u) >> 13;
    const uint rem = mag & 0x1FFFu;
    r += rem > 0x1000u || (rem == 0x1000u && (r & 1u));
    return (ushort)(sign | r);
}

static inline float f16_to_f32(ushort h)
{
    const uint sign = (uint)(h & 0x8000u) << 16;
    const uint e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1Fu)
        return as_float(sign | 0x7F800000u | (m << 13));
    if (e == 0) {
        const float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return as_float(sign | ((e + 112u) << 23) | (m << 13));
}

static inline ushort f32_to_bf16(float f)
{
    const uint x = as_uint(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (ushort)((x >> 16) | 0x40u);
    return (ushort)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

static inline float bf16_to_f32(ushort h) { return as_float((uint)h << 16); }
% if fp64:

/* a double as a float rounded to odd: rounding that to a narrower type (float16, bfloat16)
   rounds as a direct conversion of the double would */
static inline float f64_to_f32_odd(double d)
{
    const float f = convert_float_rtz(d);
    return (double)f == d ? f : as_float(as_uint(f) | 1u);
}
% endif

/* The result type's rounding of a value of the arithmetic's type. */
static inline ${W} round_res(${W} x)
{
% if res == "f16":
    return f16_to_f32(f32_to_f16(x));
% elif res == "bf16":
    return bf16_to_f32(f32_to_bf16(x));
% else:
    return x;
% endif
}
% if fp64:

/* A float64 (numpy's gamma) in the result's type. */
static inline ${W} res_of_double(double d)
{
%   if res == "f16":
    return f16_to_f32(f32_to_f16(f64_to_f32_odd(d)));
%   elif res == "bf16":
    return bf16_to_f32(f32_to_bf16(f64_to_f32_odd(d)));
%   else:
    return (${W})d;
%   endif
}
% endif

/* The stored bits of a result. */
static inline RES_T res_bits(${W} x)
{
% if res == "f16":
    return f32_to_f16(x);
% elif res == "bf16":
    return f32_to_bf16(x);
% else:
    return (RES_T)x;
% endif
}

/* A key's value, exactly, in the arithmetic's type (the host picks a type that holds it, as
   numpy's promotion does; 64-bit integers into a double round to nearest). */
static inline ${W} key_value(KEY_T k)
{
% if key_kind == "float" and key_bits == 64:
    return (${W})as_double(k);
% elif key_kind == "float" and key_bits == 32:
    return (${W})as_float(k);
% elif key_bf16:
    return (${W})bf16_to_f32(k);
% elif key_half:
    return (${W})f16_to_f32(k);
% elif key_kind == "int":
    return (${W})(${signed})k;
% else:
    return (${W})k;
% endif
}

/* b - a (b >= a) in the key's own type, then in the arithmetic's: numpy's diff_b_a. An integer
   difference is exact (numpy's wraps where it overflows the key type). */
static inline ${W} key_diff(KEY_T a, KEY_T b)
{
% if key_kind in ("int", "uint"):
%   if key_kind == "int":
    const ulong d = (ulong)(long)(${signed})b - (ulong)(long)(${signed})a;
%   else:
    const ulong d = (ulong)b - (ulong)a;
%   endif
    return round_res((${W})d);
% elif key_bf16:
    return (${W})bf16_to_f32(f32_to_bf16(bf16_to_f32(b) - bf16_to_f32(a)));
% elif key_half:
    return (${W})f16_to_f32(f32_to_f16(f16_to_f32(b) - f16_to_f32(a)));
% elif key_bits == 32:
    return (${W})(as_float(b) - as_float(a));
% else:
    return (${W})(as_double(b) - as_double(a));
% endif
}

/* The result where numpy gives NaN. */
static inline RES_T res_nan(void)
{
% if res == "f16":
    return (ushort)0x7E00u;
% elif res == "bf16":
    return (ushort)0x7FC0u;
% elif res == "key":
    return key_of_order(KEY_ONES);
% else:
    return (RES_T)NAN;
% endif
}

/* The key of rank `rank` (one of the row's rank slots: the ranks are sorted, the host gave
   them all). */
static inline KEY_T key_of_rank(const __global sel_state* st, uint nranks, ulong rank)
{
    uint s = 0;
    for (uint r = 0; r < nranks; ++r)
        s = st->rank[r] == rank ? r : s;
    return key_of_order((KEY_T)st->prefix[s]);
}

__kernel void rs_values(uint rows, uint nout, uint nranks, __global uchar* temp,
                        ulong state_off, uint final_copy, uint method, uint skip_nan,
                        const __global ulong* restrict params, __global RES_T* restrict out,
                        ulong out_off)
{
    const uint row = get_global_id(0);
    const uint qi = get_global_id(1);
    if (row >= rows || qi >= nout)
        return;
    const size_t i = (size_t)qi * rows + row;
    const __global sel_state* st = sel_state_at(temp, state_off, final_copy, rows, row);
    const ulong n = st->n_eff;
    if (skip_nan ? n == 0 : st->nans != 0) {
        out[out_off + i] = res_nan();
        return;
    }
% if op == "median":
    const KEY_T a = key_of_rank(st, nranks, (n - 1) / 2);
    ${W} r = key_value(a);
    if (!(n & 1)) {
        const KEY_T b = key_of_rank(st, nranks, n / 2);
%   if key_half and not key_bf16:
        /* numpy's float16 mean: a float32 sum, divided */
        r = (f16_to_f32(a) + f16_to_f32(b)) / 2.0f;
%   else:
        r = round_res(round_res(r + key_value(b)) / (${W})2);
%   endif
    }
    out[out_off + i] = res_bits(r);
% else:
    ulong prev, next;
    double gamma;
    const uint nq = nranks / 2;
    quantile_points(method, n, as_double(params[qi]), as_double(params[nq]),
                    as_double(params[nq + 1]), &prev, &next, &gamma);
    const KEY_T a = key_of_rank(st, nranks, prev);
%   if res == "key":
    out[out_off + i] = a;
%   else:
    const KEY_T b = key_of_rank(st, nranks, next);
    const ${W} d = key_diff(a, b);
    ${W} r = round_res(key_value(a) + round_res(d * res_of_double(gamma)));
    if (gamma >= 0.5)
        r = round_res(key_value(b) - round_res(d * res_of_double(1.0 - gamma)));
    out[out_off + i] = res_bits(r);
%   endif
% endif
}
