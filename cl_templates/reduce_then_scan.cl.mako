## Reduce-then-scan LSD radix sort: one digit pass is three kernels.
##   rts_count   - each block counts the digits of its contiguous range of tiles (local histogram)
##   rts_scan    - one work-group: exclusive scan of the digit-major count table [RADIX][num_blocks]
##   rts_scatter - each block walks its tiles in order; a tile is sorted by the digit in local memory
##                 (stable split passes of at most 4 bits), then written out coalesced, one digit run
##                 after another, at the block's running offset of each digit.
## Keys keep their own bits; the digit is taken from the order key (common.mako), so the key codec
## costs no pass and the output is bit-exact.
##
## Parameters: key codec (key_kind, key_bits, key_t, key_inf_bits), radix_bits, wg, ipt,
## value_t (None for keys only), index_t ("uint" when every index and offset fits 32 bits, else "ulong").
<%namespace name="common" file="common.mako"/>
<%
    RADIX = 1 << radix_bits
    SUB_BITS = min(radix_bits, 4)
    NSUB = radix_bits // SUB_BITS
    SUB = 1 << SUB_BITS
    TILE = wg * ipt
    iota_ok = value_t in ("uint", "ulong")
    assert radix_bits in (2, 4, 8) and radix_bits % SUB_BITS == 0
    assert TILE <= 65536, "tile positions are kept in ushort"
%>
#define KEY_T ${key_t}
#define INDEX_T ${index_t}
#define RADIX ${RADIX}
#define WG ${wg}
#define IPT ${ipt}
#define TILE ${TILE}
#define SUB_BITS ${SUB_BITS}
#define SUB ${SUB}
#define NSUB ${NSUB}
% if value_t:
#define VALUE_T ${value_t}
% endif

${common.order_key_fn(key_kind, key_bits, key_t, key_inf_bits)}
${common.wg_scan_fn("wg_scan_uint", "uint", wg)}
% if index_t != "uint":
${common.wg_scan_fn("wg_scan_index", index_t, wg)}
% else:
#define wg_scan_index wg_scan_uint
% endif

inline uint digit_of(KEY_T x, uint shift, uint digit_mask, KEY_T flip)
{
    return (uint)(order_key(x, flip) >> shift) & digit_mask;
}


## One stable split pass of the tile in local memory by a sub-digit of at most SUB_BITS bits.
## Work-item lid holds items k[i], src[i] (tile positions lid*IPT + i; positions >= valid are
## padding, given the largest sub-digit so they stay behind every real key). `sub` is the C
## expression of item i's sub-digit. Leaves the tile reordered in lkeys / lperm (source positions).
<%def name="local_split(sub)">
            for (uint e = lid; e < SUB * WG; e += WG)
                lcount[e] = 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            uint sd[IPT];
            for (uint i = 0; i < IPT; ++i) {
                sd[i] = lid * IPT + i < valid ? (uint)(${sub}) : (uint)(SUB - 1);
                lcount[sd[i] * WG + lid] += 1;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            {
                /* digit-major exclusive scan: item lid rakes entries [lid*SUB, lid*SUB + SUB) */
                uint sum = 0;
                for (uint r = 0; r < SUB; ++r)
                    sum += lcount[lid * SUB + r];
                uint total;
                uint run = wg_scan_uint(sum, lscan, lid, &total);
                for (uint r = 0; r < SUB; ++r) {
                    const uint c = lcount[lid * SUB + r];
                    lcount[lid * SUB + r] = run;
                    run += c;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            for (uint i = 0; i < IPT; ++i) {
                const uint e = sd[i] * WG + lid;
                const uint rank = lcount[e];
                lcount[e] = rank + 1;
                if (lid * IPT + i < valid) {
                    lkeys[rank] = k[i];
                    lperm[rank] = src[i];
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
</%def>

## Take the items back from local memory after a split pass.
<%def name="local_reload()">
                for (uint i = 0; i < IPT; ++i) {
                    const uint j = lid * IPT + i;
                    if (j < valid) {
                        k[i] = lkeys[j];
                        src[i] = lperm[j];
                    }
                }
</%def>

/* counts[d * num_blocks + block] = number of keys of digit d in the block's tiles */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rts_count(__global const KEY_T* restrict keys, ulong keys_off,
               __global INDEX_T* restrict counts,
               INDEX_T n, INDEX_T tiles_per_block, uint num_blocks,
               uint shift, uint digit_mask, KEY_T flip)
{
    __local uint hist[RADIX];
    const uint lid = get_local_id(0);
    const uint block = get_group_id(0);
    keys += keys_off;
    for (uint e = lid; e < RADIX; e += WG)
        hist[e] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const INDEX_T start = (INDEX_T)block * tiles_per_block * TILE;
    const INDEX_T end = min(start + tiles_per_block * TILE, n);
    for (INDEX_T i = start + lid; i < end; i += WG)
        atomic_inc(&hist[digit_of(keys[i], shift, digit_mask, flip)]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint e = lid; e < RADIX; e += WG)
        counts[(INDEX_T)e * num_blocks + block] = hist[e];
}

/* In place: counts[i] = sum of counts[0..i) (one work-group; each item rakes a contiguous run). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rts_scan(__global INDEX_T* restrict counts, uint m)
{
    __local INDEX_T scratch[WG];
    const uint lid = get_local_id(0);
    const uint per = (m + WG - 1) / WG;
    const uint b = min(lid * per, m);
    const uint e = min(b + per, m);
    INDEX_T sum = 0;
    for (uint i = b; i < e; ++i)
        sum += counts[i];
    INDEX_T total;
    INDEX_T run = wg_scan_index(sum, scratch, lid, &total);
    for (uint i = b; i < e; ++i) {
        INDEX_T c = counts[i];
        counts[i] = run;
        run += c;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rts_scatter(__global const KEY_T* restrict keys_in, ulong keys_in_off,
                 __global KEY_T* restrict keys_out, ulong keys_out_off,
% if value_t:
                 __global const VALUE_T* restrict vals_in, ulong vals_in_off,
                 __global VALUE_T* restrict vals_out, ulong vals_out_off, uint vals_iota,
% endif
                 __global const INDEX_T* restrict offsets,
                 INDEX_T n, INDEX_T tiles_per_block, uint num_blocks,
                 uint shift, uint digit_mask, KEY_T flip, uint write_keys)
{
    __local KEY_T lkeys[TILE];
    __local ushort lperm[TILE];
    __local uint lcount[SUB * WG];
    __local uint lscan[WG];
    __local uint lstart[RADIX];
    __local uint lend[RADIX];
    __local INDEX_T lrun[RADIX];

    const uint lid = get_local_id(0);
    const uint block = get_group_id(0);
    keys_in += keys_in_off;
    keys_out += keys_out_off;
% if value_t:
    vals_in += vals_in_off;
    vals_out += vals_out_off;
% endif

    const INDEX_T num_tiles = (n + TILE - 1) / TILE;
    const INDEX_T t0 = (INDEX_T)block * tiles_per_block;
    const INDEX_T t1 = min(t0 + tiles_per_block, num_tiles);
    for (uint e = lid; e < RADIX; e += WG) {
        lrun[e] = offsets[(INDEX_T)e * num_blocks + block];
        lstart[e] = 0;
        lend[e] = 0;
    }

    for (INDEX_T t = t0; t < t1; ++t) {
        const INDEX_T base = t * TILE;
        const uint valid = (uint)min((INDEX_T)TILE, n - base);

        /* coalesced load, tile order kept in local memory */
        for (uint i = 0; i < IPT; ++i) {
            const uint j = i * WG + lid;
            if (j < valid)
                lkeys[j] = keys_in[base + j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* each item takes IPT consecutive keys; positions >= valid are padding with the largest
           sub-digit, so they stay behind every real key of the tile */
        KEY_T k[IPT];
        ushort src[IPT];
        for (uint i = 0; i < IPT; ++i) {
            const uint j = lid * IPT + i;
            src[i] = (ushort)j;
            k[i] = j < valid ? lkeys[j] : (KEY_T)0;
        }

        /* stable local sort by the digit: NSUB split passes of SUB_BITS bits, least significant first */
        for (uint s = 0; s < NSUB; ++s) {
            const uint ss = s * SUB_BITS;
            ${local_split("(digit_of(k[i], shift, digit_mask, flip) >> ss) & (SUB - 1)")}
            if (s + 1 < NSUB) {
                ${local_reload()}
            }
        }

        /* the tile is now ordered by digit: find where each digit's run starts and ends */
        uint dd[IPT];
        for (uint i = 0; i < IPT; ++i) {
            const uint j = i * WG + lid;
            if (j < valid) {
                const uint d = digit_of(lkeys[j], shift, digit_mask, flip);
                dd[i] = d;
                if (j == 0 || digit_of(lkeys[j - 1], shift, digit_mask, flip) != d)
                    lstart[d] = j;
                if (j == valid - 1 || digit_of(lkeys[j + 1], shift, digit_mask, flip) != d)
                    lend[d] = j + 1;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* coalesced scatter: consecutive local positions of a digit go to consecutive addresses */
        for (uint i = 0; i < IPT; ++i) {
            const uint j = i * WG + lid;
            if (j < valid) {
                const uint d = dd[i];
                const INDEX_T pos = lrun[d] + (j - lstart[d]);
                if (write_keys)
                    keys_out[pos] = lkeys[j];
% if value_t:
%   if iota_ok:
                if (vals_iota)
                    vals_out[pos] = (VALUE_T)(base + lperm[j]);
                else
%   endif
                    vals_out[pos] = vals_in[base + lperm[j]];
% endif
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint e = lid; e < RADIX; e += WG) {
            lrun[e] += lend[e] - lstart[e];
            lstart[e] = 0;
            lend[e] = 0;
        }
    }
}


/* A whole sort of n <= TILE keys by one work-group in one launch: split passes of SUB_BITS bits
   over [begin_bit, end_bit) in local memory, then one write. Buffers may be the same (in place):
   everything is read before anything is written. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rts_small(__global const KEY_T* keys_in, ulong keys_in_off,
               __global KEY_T* keys_out, ulong keys_out_off,
% if value_t:
               __global const VALUE_T* vals_in, ulong vals_in_off,
               __global VALUE_T* vals_out, ulong vals_out_off, uint vals_iota,
% endif
               uint n, uint begin_bit, uint end_bit, KEY_T flip, uint write_keys)
{
    __local KEY_T lkeys[TILE];
    __local ushort lperm[TILE];
    __local uint lcount[SUB * WG];
    __local uint lscan[WG];
    const uint lid = get_local_id(0);
    const uint valid = n;
    keys_in += keys_in_off;
    keys_out += keys_out_off;
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid)
            lkeys[j] = keys_in[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    KEY_T k[IPT];
    ushort src[IPT];
    for (uint i = 0; i < IPT; ++i) {
        const uint j = lid * IPT + i;
        src[i] = (ushort)j;
        k[i] = j < valid ? lkeys[j] : (KEY_T)0;
    }
    for (uint shift = begin_bit; shift < end_bit; shift += SUB_BITS) {
        const uint m = (1u << min((uint)SUB_BITS, end_bit - shift)) - 1u;
        ${local_split("(uint)(order_key(k[i], flip) >> shift) & m")}
        if (shift + SUB_BITS < end_bit) {
            ${local_reload()}
        }
    }
% if value_t:
    vals_in += vals_in_off;
    vals_out += vals_out_off;
    VALUE_T v[IPT];
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid) {
%   if iota_ok:
            if (vals_iota)
                v[i] = (VALUE_T)lperm[j];
            else
%   endif
                v[i] = vals_in[lperm[j]];
        }
    }
% endif
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (uint i = 0; i < IPT; ++i) {
        const uint j = i * WG + lid;
        if (j < valid) {
            if (write_keys)
                keys_out[j] = lkeys[j];
% if value_t:
            vals_out[j] = v[i];
% endif
        }
    }
}

% if iota_ok:
${common.iota_kernel(value_t, index_t)}
% endif
