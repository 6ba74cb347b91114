## The rank select's shared C: what rank_select.cl.mako (the passes, the split, the locate) and
## rank_values.cl.mako (medians and quantiles from the thresholds) both compile. A library of
## defs; each program imports it with
##   <%namespace name="steps" file="rank_select_steps.mako"/>
## and emits ${steps.prelude()} first.
##
## Parameters (both programs): key codec (key_kind, key_bits, key_t, key_inf_bits), index_t
## (counts and positions within a row), first_bits and digit_bits (the digits' widths: the
## first, then the others; the last the narrower one), rmax (rank slots per row), state_bytes
## (the host's size of one row state), fp64 (the device has cl_khr_fp64: numpy's quantile
## indexes).
<%namespace name="common" file="common.mako"/>

<%def name="prelude()">
<%
    assert 0 < first_bits <= key_bits and 0 < digit_bits
    DIGITS = 1 + -(-(key_bits - first_bits) // digit_bits)
    ones = (1 << key_bits) - 1
    suffix = "UL" if key_bits == 64 else "U"
%>
% if index_t == "ulong" or key_bits == 64:
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
% endif
% if fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
/* numpy's arithmetic is reproduced operation by operation: none is fused (a * b + c rounds
   twice, as numpy's does) */
#pragma OPENCL FP_CONTRACT OFF
#define KEY_T ${key_t}
#define INDEX_T ${index_t}
#define KEY_BITS ${key_bits}
#define FIRST_BITS ${first_bits}
#define DIGIT_BITS ${digit_bits}
#define FIRST_RADIX ${1 << first_bits}
#define RADIX ${1 << digit_bits}
#define DIGITS ${DIGITS}
#define RMAX ${rmax}
#define STATE_BYTES ${state_bytes}
#define KEY_ONES ((KEY_T)${hex(ones)}${suffix})
${common.step_define()}
${common.order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}
${common.counter_fns(index_t)}

/* The selection's state of one row between passes: every rank slot's target and what the passes
   resolved of it (the digits of its order key, most significant first), and the row's groups.
   A group is a prefix (the digits resolved so far) that one rank or more share; a pass counts
   the next digit of every key in a group's prefix, one histogram per group. Ranks are in
   ascending order, so their prefixes are too and a group's ranks are neighbours. After the last
   digit a rank's prefix is the whole order key T of the key of that rank, `below` the keys
   whose order key is smaller and `count` those equal to it. */
typedef struct {
    ulong rank[RMAX];    /* the target: a position (from 0) in the row's ascending order */
    ulong below[RMAX];   /* keys whose order key is below the prefix's range */
    ulong count[RMAX];   /* keys in the prefix's range */
    ulong prefix[RMAX];  /* the resolved digits of the rank's order key (a KEY_T) */
    ulong n_src;         /* what the pass reads: the row's keys, or the candidates */
    ulong n_eff;         /* the keys the ranks count (the row, or its keys that are not NaN) */
    ulong nans;          /* the row's NaN keys */
    uint group[RMAX];    /* the rank's group */
    uint ngroups;
    uint flags;
} sel_state;
/* the host gives each row state STATE_BYTES bytes (a compile error where it does not fit) */
typedef char sel_state_fits[sizeof(sel_state) <= STATE_BYTES ? 1 : -1];

#define F_SRC_CANDS 1u   /* the pass reads the candidates the pass before wrote */
#define F_WRITE 2u       /* the pass writes its keys (every group's) as candidates */

/* The temporaries live in one buffer (no sub-buffers): each at a byte offset of `temp`. */
#define AT(type, off) ((__global type*)(temp + (off)))

/* Copy c (0 or 1) of a row's state: pass p reads copy p & 1 and its last work-group writes
   copy (p + 1) & 1, so that no work-group of a pass reads what another one of it writes. */
static inline __global sel_state* sel_state_at(__global uchar* temp, ulong state_off, uint c,
                                             uint rows, uint row)
{
    return (__global sel_state*)(temp + state_off + ((ulong)c * rows + row) * STATE_BYTES);
}

/* The digits, most significant first: FIRST_BITS, then DIGIT_BITS each, the last one the
   narrower (its low bits). The shift of digit p, its value, and the mask of the first p. */
static inline uint sel_shift(uint p)
{
    const int s = KEY_BITS - FIRST_BITS - DIGIT_BITS * (int)p;
    return s > 0 ? (uint)s : 0u;
}

static inline uint sel_digit(KEY_T k, uint p)
{
    return (uint)(k >> sel_shift(p)) & (p == 0 ? FIRST_RADIX - 1 : RADIX - 1);
}

static inline KEY_T prefix_mask(uint p)
{
    return p == 0 ? (KEY_T)0 : (KEY_T)(KEY_ONES << sel_shift(p - 1));
}

/* The key of an order key: order_key's inverse, except that the two zeros are one order key
   (+0.0 comes back) and so are the NaNs (the quiet NaN of positive sign comes back). */
static inline KEY_T key_of_order(KEY_T e)
{
<%
    sign = 1 << (key_bits - 1)
    # the quiet NaN: +inf's bits with the mantissa's top bit set
    qnan = key_inf_bits | ((key_inf_bits & -key_inf_bits) >> 1)
%>
% if key_kind == "uint":
    return e;
% elif key_kind == "int":
    return (KEY_T)(e ^ (KEY_T)${hex(sign)}${suffix});
% else:
    const KEY_T sign = (KEY_T)${hex(sign)}${suffix};
    if (e == KEY_ONES)
        return (KEY_T)${hex(qnan)}${suffix};
    return (e & sign) ? (KEY_T)(e ^ sign) : (KEY_T)~e;
% endif
}
% if fp64:

/* numpy's quantile methods (numpy/lib/_function_base_impl.py, _QuantileMethods), by number */
#define M_INVERTED_CDF 0
#define M_AVERAGED_INVERTED_CDF 1
#define M_CLOSEST_OBSERVATION 2
#define M_INTERPOLATED_INVERTED_CDF 3
#define M_HAZEN 4
#define M_WEIBULL 5
#define M_LINEAR 6
#define M_MEDIAN_UNBIASED 7
#define M_NORMAL_UNBIASED 8
#define M_LOWER 9
#define M_HIGHER 10
#define M_MIDPOINT 11
#define M_NEAREST 12

/* The positions (from 0) of the two order statistics that quantile q of n >= 1 keys reads and
   the weight of the second, each operation as numpy's in float64 (its virtual index, the index
   clipped to the row with -1 for the last key, gamma from the clipped index, the method's
   gamma fix). Discrete methods read one statistic (*prev == *next). alpha and c: the method's
   alpha and 1 - alpha - beta as numpy computes them (the host passes them). */
static inline void quantile_points(uint method, ulong n, double q, double alpha, double c,
                                   ulong* prev, ulong* next, double* gamma)
{
    const double nd = (double)n;
    const double lin = (double)(n - 1) * q;
    double v = 0.0;
    long idx = -2;   /* discrete methods: the index */
    switch (method) {
    case M_INVERTED_CDF:
    case M_CLOSEST_OBSERVATION: {
        const double x = method == M_INVERTED_CDF ? nd * q - 1.0 : nd * q - 1.0 - 0.5;
        const double f = floor(x);
        const double g = x - f;
        /* numpy: np.floor(index) % 2 == 1 (a floored modulo) */
        const bool odd = f - 2.0 * floor(f * 0.5) == 1.0;
        const bool at_prev = method == M_INVERTED_CDF ? g == 0.0 : (g == 0.0 && odd);
        idx = (long)(at_prev ? f : f + 1.0);
        idx = idx < 0 ? 0 : idx;
        break;
    }
    case M_LOWER: idx = (long)floor(lin); break;
    case M_HIGHER: idx = (long)ceil(lin); break;
    case M_NEAREST: idx = (long)rint(lin); break;
    case M_LINEAR: v = lin; break;
    case M_AVERAGED_INVERTED_CDF: v = nd * q - 1.0; break;
    case M_MIDPOINT: v = 0.5 * (floor(lin) + ceil(lin)); break;
    default: v = nd * q + (alpha + q * c) - 1.0; break;
    }
    if (idx != -2) {
        *prev = *next = (ulong)idx;
        *gamma = 0.0;
        return;
    }
    double pf = floor(v);
    double nf = pf + 1.0;
    if (v >= nd - 1.0)
        pf = nf = -1.0;
    if (v < 0.0)
        pf = nf = 0.0;
    double g = v - pf;
    if (method == M_AVERAGED_INVERTED_CDF)
        g = g == 0.0 ? 0.5 : 1.0;
    else if (method == M_MIDPOINT)
        g = v - floor(v) == 0.0 ? 0.0 : 0.5;
    *prev = pf < 0.0 ? n - 1 : (ulong)pf;
    *next = nf < 0.0 ? n - 1 : (ulong)nf;
    *gamma = g;
}
% endif
</%def>
