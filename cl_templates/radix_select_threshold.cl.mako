/* Top-k radix select: the threshold pass's program (sample > 0), a program of its own: a compiler
   may count the local arrays of every pass kernel of one program against one of them, as
   oclgrind's does. Its steps, and the algorithm, are in radix_select_steps.mako, whose prelude
   follows; radix_select.cl.mako's passes run after it.

     topk_sample - one work-group per row sorts `sample` keys taken at evenly spaced positions and
                   makes the order key of rank `rank` among them the row's threshold
     topk_pass_t - reads the row once, writes every key whose order key is at most the threshold
                   as a candidate and counts their digit 0. When at least k and at most cap keys
                   passed (the k-th of the row is among them), its last work-group writes the
                   state of pass 1 (a pivot among the candidates) and pass 0 returns at once: the
                   row is read once. Otherwise pass 0 and the later passes run as without it.
                   Its candidate slots come in chunks: a work-group's, or on NVIDIA (ptx) each
                   warp's own; the rest of a chunk no candidate took holds dead entries (DEAD_POS),
                   which pass 1 skips. */
<%namespace name="common" file="common.mako"/>
<%namespace name="steps" file="radix_select_steps.mako"/>
<% assert sample, "the threshold pass's program is built with a sample" %>
${steps.prelude()}
${common.bitonic_sort_fn("bitonic_sort_keys", "KEY_T")}

/* The row's threshold: the order key of rank `rank` (from 1) among SAMPLE keys taken at evenly
   spaced positions of the row (the middle of each of SAMPLE equal stretches), sorted in local
   memory; written with F_THRESH into the state's copy 1, which topk_pass_t reads. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void topk_sample(const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len, INDEX_T k,
                 KEY_T flip, uint rank, __global uchar* temp, ulong state_off)
{
    const uint row = get_group_id(0);
    const uint rows = get_num_groups(0);
    const uint lid = get_local_id(0);
    const __global KEY_T* src = keys + keys_off + (size_t)row * row_len;
    __local KEY_T ls[SAMPLE];
    for (uint j = 0; j < SAMPLE / WG; ++j) {
        const uint i = j * WG + lid;
        const ulong at = ((ulong)i * (ulong)row_len + (ulong)row_len / 2) / SAMPLE;
        ls[i] = order_key(src[at], flip);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    bitonic_sort_keys(ls, SAMPLE, lid);
    if (lid == 0) {
        row_state st = first_state(k, row_len);
        st.pkey = (ulong)ls[rank - 1];
        st.flags = F_THRESH;
        *state_copy(temp, state_off, 1, rows, row) = st;
    }
}

/* The threshold pass's classification: an element whose order key is at most the row's threshold
   is a candidate to write, counted by its digit 0; none is taken. */
STEP uint2 threshold_tile(__private uint* cls, const __private KEY_T* x,
                          const __private INDEX_T* pos, INDEX_T base, INDEX_T n, bool full,
                          KEY_T thresh, KEY_T flip, uint pos_bits, __local uint* lhist, uint lid)
{
    uint n_cand = 0;
    #pragma unroll
    for (uint i = 0; i < IPT; ++i) {
        const KEY_T sel = order_key(x[i], flip);
        const bool cand = (full || ELEM(i) < n) && sel <= thresh;
        count_candidate(lhist, cand, sel, pos[i], 0, pos_bits, lid);
        cls[i] = cand ? 2u : 0u;
        n_cand += cand ? 1u : 0u;
    }
    return (uint2)(0u, n_cand);
}

/* Candidate slots [a, b) that no candidate took (the threshold pass's chunks): dead entries,
   which the pass reading the candidates skips. Every work-item of the group (stride WG) or of
   the warp (stride 32) calls it. */
STEP void fill_dead(INDEX_T a, INDEX_T b, __global KEY_T* cout_key, __global INDEX_T* cout_pos,
                    INDEX_T cap, uint first, uint stride)
{
    for (INDEX_T i = a + first; i < min(b, cap); i += stride) {
        cout_key[i] = (KEY_T)0;
        cout_pos[i] = DEAD_POS;
    }
}
% if ptx:

/* The threshold pass on NVIDIA: each warp takes `chunk` slots at a time from the row's counter
   (*next to *end, the same in every lane) and hands them to its lanes, without a barrier, so
   that the warps of a group stream the row on their own; the rest of a chunk too small for the
   warp's candidates becomes dead entries. Every lane calls it; returns the lane's first slot. */
STEP INDEX_T warp_slots(uint n, __global INDEX_T* count, INDEX_T chunk,
                        __private INDEX_T* next, __private INDEX_T* end,
                        __global KEY_T* cout_key, __global INDEX_T* cout_pos, INDEX_T cap,
                        uint lid)
{
    const uint lane = lid & 31u;
    const uint x = warp_scan_incl(n, lane);
    const uint total = sg_shuffle(x, 31);
    if (*next + total > *end) {
        fill_dead(*next, *end, cout_key, cout_pos, cap, lane, 32);
        const INDEX_T size = max(chunk, (INDEX_T)total);
        INDEX_T base = 0;
        if (lane == 31u)
            base = COUNTER_ADD(count, size);
%   if index_t == "ulong":
        base = (INDEX_T)sg_shuffle((uint)base, 31)
               | ((INDEX_T)sg_shuffle((uint)(base >> 32), 31) << 32);
%   else:
        base = sg_shuffle(base, 31);
%   endif
        *next = base;
        *end = base + size;
    }
    const INDEX_T c = *next + (x - n);
    *next += total;
    return c;
}

/* The threshold pass's tiles on NVIDIA: each warp with candidates takes slots from its own chunk
   (warp_slots), no barrier per tile; then the rest of the warp's last chunk, dead entries. */
STEP void threshold_tiles(pass_io io, KEY_T thresh, pass_filter f, INDEX_T chunk, uint g,
                          uint groups_per_row, pass_locals loc, uint lid)
{
    INDEX_T w_next = 0, w_end = 0;   /* the warp's chunk of candidate slots */
    for (INDEX_T base = (INDEX_T)g * TILE; base < io.n_src;
         base += (INDEX_T)groups_per_row * TILE) {
        KEY_T x[IPT];
        INDEX_T pos[IPT];
        uint cls[IPT];    /* 2: a candidate to write, 0: not */
        const bool full = base + TILE <= io.n_src;
        load_pass_tile(x, pos, io, f.from_cands, base, full, lid);
        const uint2 n = threshold_tile(cls, x, pos, base, io.n_src, full, thresh, f.flip,
                                       f.pos_bits, loc.hist, lid);
        if (sg_ballot(n.y != 0))
            write_tile(x, pos, cls, 0,
                       warp_slots(n.y, io.counters + 1, chunk, &w_next, &w_end, io.cout_key,
                                  io.cout_pos, io.cap, lid),
                       io.out_key, io.out_idx, io.k, io.idx_base, io.cout_key, io.cout_pos,
                       io.cap);
    }
    fill_dead(w_next, w_end, io.cout_key, io.cout_pos, io.cap, lid & 31u, 32);
}
% else:

/* The threshold pass's tiles by work-group: slots from the group's chunk (claim_slots), whose
   hole (the rest of a chunk too small for the tile) is filled with dead entries; then the rest
   of the group's last chunk, dead entries. */
STEP void threshold_tiles(pass_io io, KEY_T thresh, pass_filter f, INDEX_T chunk, uint g,
                          uint groups_per_row, pass_locals loc, uint lid)
{
    uint tile_no = 0;
    for (INDEX_T base = (INDEX_T)g * TILE; base < io.n_src;
         base += (INDEX_T)groups_per_row * TILE, ++tile_no) {
        KEY_T x[IPT];
        INDEX_T pos[IPT];
        uint cls[IPT];    /* 2: a candidate to write, 0: not */
        const bool full = base + TILE <= io.n_src;
        load_pass_tile(x, pos, io, f.from_cands, base, full, lid);
        const uint2 n = threshold_tile(cls, x, pos, base, io.n_src, full, thresh, f.flip,
                                       f.pos_bits, loc.hist, lid);
%   if skip_idle_tiles:
        if (tile_has_output((n.x | n.y) != 0, loc.any, tile_no, lid)) {
%   else:
        {   /* every tile claims slots: no barrier in a branch (see skip_idle_tiles) */
%   endif
            INDEX_T o, c;
            claim_slots(n.x, n.y, loc.scratch, loc.base, io.counters, io.counters + 1, chunk,
                        lid, &o, &c);
            write_tile(x, pos, cls, o, c, io.out_key, io.out_idx, io.k, io.idx_base, io.cout_key,
                       io.cout_pos, io.cap);
            fill_dead(loc.base[4], loc.base[5], io.cout_key, io.cout_pos, io.cap, lid, WG);
        }
    }
    fill_dead(loc.base[2], loc.base[3], io.cout_key, io.cout_pos, io.cap, lid, WG);
}
% endif

/* The end of the threshold pass for one work-group of a row, as finish_pass; the group that
   finishes last takes the histogram of the candidates' digit 0 and their count. At least k and at
   most cap: the state pass 0 reads (copy 0; the pass read copy 1) is the state of pass 1, the
   pivot among the candidates (read from the candidate buffer pass 0 would have written), marked
   F_SKIP: pass 0 only hands it on. Otherwise it is the first state again, and the passes run as
   without the threshold. Either way the counters and histogram are zero again, as pass 0's own
   end leaves them. */
STEP void finish_threshold(row_state st, uint pos_bits, uint groups_per_row, pass_io io,
                           __global row_state* state0, pass_locals loc, uint lid)
{
    INDEX_T hd[RPT];
    if (finished_last(true, groups_per_row, loc.hist, io.hist, io.counters, loc.last, hd, lid)) {
        INDEX_T sum = 0;
        for (uint j = 0; j < RPT; ++j)
            sum += hd[j];
        INDEX_T total;
        wg_scan_index(sum, loc.iscratch, lid, &total);
        /* the candidates as pass 0's output: pass 1 reads them (every work-item calls it) */
        row_state c = first_state(st.need, total);
        c.flags = F_WRITE;
        if (lid == 0)
            *loc.state = c;   /* what next_state returns when the k-th is not among them */
        const row_state s = next_state(c, hd, 0, pos_bits, io.cap, loc.iscratch, loc.state, lid);
        if (lid == 0) {
            /* the slots the groups took: the candidates and their chunks' dead entries (read
               only: pass 0 zeroes the counter for pass 2, whether it runs or hands on; PoCL 3.0
               returned 0 here from an exchange, and from an add of 0 followed by one) */
            const INDEX_T slots = COUNTER_ADD(io.counters + 1, 0);
            if (total >= st.need && slots <= io.cap) {
                row_state skip = s;
                skip.flags |= F_SKIP;
                skip.src_count = slots;   /* pass 1 reads every slot, skipping dead ones */
                *state0 = skip;
            } else {
                *state0 = first_state(st.need, st.count);
            }
            COUNTER_TAKE(io.counters + 3);
        }
    }
}

/* The threshold pass: pass 0's counting over the keys at most the row's threshold (topk_sample's
   state, copy 1), which it writes as candidates; its last group writes the state pass 0 reads
   (copy 0). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void topk_pass_t(${steps.pass_params("uint p_arg")})
{
    const uint p = 0;
    const uint row = get_group_id(1);
    const uint g = get_group_id(0);
    const uint rows = get_num_groups(1);
    const uint lid = get_local_id(0);
    const INDEX_T chunk = p_arg;   /* the threshold pass takes its chunk of slots in p's place */
${steps.pass_locals("loc")}
    const row_state st = *state_copy(temp, state_off, 1, rows, row);
    __global row_state* state_next = state_copy(temp, state_off, 0, rows, row);
    if (!(st.flags & F_THRESH))
        return;
    if (hand_on_done(st, state_next, g, lid))
        return;
    pass_filter f = filter_of(st, p, pos_bits, flip);
    f.last = f.from_cands = f.write = false;   /* nothing decided yet */
    const pass_io io = pass_io_of(p, row, f.from_cands, st.src_count, keys, keys_off, row_len, k,
                                  cap, idx_row_mul, temp, hist_off, counters_off, cand_key0_off,
                                  cand_pos0_off, cand_key1_off, cand_pos1_off, out_key,
                                  out_key_off, out_idx, out_idx_off);
% if not ptx:
    if (lid == 0)   /* the group's chunk (warps keep their own on NVIDIA) */
        loc.base[2] = loc.base[3] = loc.base[4] = loc.base[5] = 0;
% endif
    clear_pass_locals(loc, lid);
    threshold_tiles(io, (KEY_T)st.pkey, f, chunk, g, groups_per_row, loc, lid);
    finish_threshold(st, pos_bits, groups_per_row, io, state_next, loc, lid);
}
