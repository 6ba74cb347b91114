/* Top-k radix select: the selection's program (its steps, and the algorithm, are in
   radix_select_steps.mako, whose prelude follows; the threshold pass is a program of its own,
   radix_select_threshold.cl.mako: a compiler may count the local arrays of every pass kernel of
   one program against one of them, as oclgrind's does).

     topk_init   - per row: state, counters and histogram zeroed
     topk_pass_0 - pass 0: counts digit 0 of the row; or, when topk_pass_t selected the
                   candidates (sample > 0), hands on the state of pass 1 it wrote
     topk_pass_1 - pass 1: reads the row (or topk_pass_t's candidates), takes and writes
     topk_pass   - pass p >= 2 (p its last argument): reads the row or the candidates of pass p - 1
     topk_fused  - (fused) every pass in one launch: work-groups in pass order, a pass's groups
                   waiting until the pass before wrote the row's state
     topk_sort_rows - (sort_size) per row, in local memory: bitonic sort of the k selected pairs
     topk_single - one work-group per row does every pass over its row (re-read from global
                   memory, a cache's worth for the rows it is planned for), the histogram and pivot
                   in local memory, and (sorted, k <= sort_size) sorts the selection in local
                   memory: the whole top-k in one launch.
     topk_row_of / topk_gather - the pieces of the global-sort route for larger k

   The pass kernels run over the rows (NDRange groups_per_row x rows groups): group g of a row
   handles tiles g, g + groups_per_row, ... The first two passes, which read whole rows, have
   kernels of their own with p a constant: their per-key work folds to a few instructions, and
   pass 0, which has no output, only counts (no per-tile barrier). Every argument but the last
   is the same for every pass of a call.

   The program of a local sort size (sort_size, which follows k) holds only the kernels that sort
   in local memory, topk_single and topk_sort_rows (passes false); the selection's other kernels
   come from the program rendered with sort_size 0 (passes true), whose kernels do not depend on
   k: a new k builds only the two sorting kernels. */
<%namespace name="common" file="common.mako"/>
<%namespace name="steps" file="radix_select_steps.mako"/>
${steps.prelude()}
% if passes:

__kernel void topk_init(__global uchar* temp, ulong state_off, ulong hist_off, ulong counters_off,
                        uint rows, INDEX_T k, INDEX_T row_len, ulong sync_off)
{
    __global INDEX_T* hist = AT(INDEX_T, hist_off);
    const uint row = get_group_id(0);
    const uint lid = get_local_id(0);
    for (uint j = 0; j < RPT; ++j)
        hist[(size_t)row * RADIX + j * WG + lid] = 0;
    if (lid == 0) {
        /* pass 0 reads copy 0 */
        *state_copy(temp, state_off, 0, rows, row) = first_state(k, row_len);
        __global INDEX_T* counters = row_counters(temp, counters_off, row);
        counters[0] = 0;   /* output slots */
        counters[1] = 0;   /* candidate slots, even passes */
        counters[2] = 0;   /* candidate slots, odd passes */
        counters[3] = 0;   /* work-groups done with the pass */
        /* (topk_fused) the row's passes whose state is written; row 0: the virtual ids */
        AT(uint, sync_off)[1 + row] = 0;
        if (row == 0)
            AT(uint, sync_off)[0] = 0;
    }
}
% endif

/* An element by its digit p - 1 against the pivot: 1 among the k, 2 a candidate to write, 0
   neither (above the pivot, decided earlier, invalid, or a candidate not written). Candidates are
   counted by digit p. */
STEP uint classify(KEY_T sel, INDEX_T pi, bool valid, pass_filter f, __local uint* lhist,
                   uint lid)
{
    /* elements that left the pivot's bucket at an earlier digit were decided then */
    const bool match = valid && (f.from_cands || (((sel ^ f.pkey) & f.kmask) == 0
                                                  && ((pi ^ f.ppos) & f.pmask) == 0));
    const uint d = f.p > 0 ? digit_at(sel, pi, f.p - 1, f.pos_bits) : f.bucket;
    const bool take = match && (d < f.bucket || (d == f.bucket && f.last));
    const bool cand = match && d == f.bucket && !f.last;   /* still in the pivot's bucket */
    count_candidate(lhist, cand, sel, pi, f.p, f.pos_bits, lid);
    return take ? 1u : (cand && f.write ? 2u : 0u);
}

/* cls[i] for each element of a tile; returns how many are taken and how many are candidates to
   write. */
STEP uint2 classify_tile(__private uint* cls, const __private KEY_T* x,
                         const __private INDEX_T* pos, INDEX_T base, INDEX_T n, bool full,
                         pass_filter f, __local uint* lhist, uint lid)
{
    uint n_take = 0, n_cand = 0;
    #pragma unroll
    for (uint i = 0; i < IPT; ++i) {
% if sample:
        /* (the threshold pass's candidates have dead entries: slots its groups did not use) */
        const bool valid = (full || ELEM(i) < n) && !(f.from_cands && pos[i] == DEAD_POS);
% else:
        const bool valid = full || ELEM(i) < n;
% endif
        const uint c = classify(order_key(x[i], f.flip), pos[i], valid, f, lhist, lid);
        cls[i] = c;
        n_take += c & 1u;
        n_cand += c >> 1;
    }
    return (uint2)(n_take, n_cand);
}

/* Pass 0's tiles: each loaded and its candidates counted by digit 0. Nothing is taken or written,
   so there is no barrier per tile. */
STEP void count_tiles(pass_io io, pass_filter f, uint g, uint groups_per_row,
                      __local uint* lhist, uint lid)
{
    for (INDEX_T base = (INDEX_T)g * TILE; base < io.n_src;
         base += (INDEX_T)groups_per_row * TILE) {
        KEY_T x[IPT];
        INDEX_T pos[IPT];
        uint cls[IPT];
        const bool full = base + TILE <= io.n_src;
        load_pass_tile(x, pos, io, f.from_cands, base, full, lid);
        classify_tile(cls, x, pos, base, io.n_src, full, f, lhist, lid);
    }
}

/* The tiles of pass p >= 1: each loaded and classified, then its output slots claimed (one
   counter add each for the whole tile) and its taken elements and candidates written. */
STEP void select_tiles(pass_io io, pass_filter f, uint g, uint groups_per_row, pass_locals loc,
                       uint lid)
{
    uint tile_no = 0;
    for (INDEX_T base = (INDEX_T)g * TILE; base < io.n_src;
         base += (INDEX_T)groups_per_row * TILE, ++tile_no) {
        KEY_T x[IPT];
        INDEX_T pos[IPT];
        uint cls[IPT];    /* 1: among the k, 2: a candidate to write, 0: neither */
        const bool full = base + TILE <= io.n_src;
        load_pass_tile(x, pos, io, f.from_cands, base, full, lid);
        const uint2 n = classify_tile(cls, x, pos, base, io.n_src, full, f, loc.hist, lid);
% if skip_idle_tiles:
        if (tile_has_output((n.x | n.y) != 0, loc.any, tile_no, lid)) {
% else:
        {   /* every tile claims slots: no barrier in a branch (see skip_idle_tiles) */
% endif
            INDEX_T o, c;
            claim_slots(n.x, n.y, loc.scratch, loc.base, io.counters,
                        io.counters + 1 + (f.p & 1), 0, lid, &o, &c);
            write_tile(x, pos, cls, o, c, io.out_key, io.out_idx, io.k, io.idx_base, io.cout_key,
                       io.cout_pos, io.cap);
        }
    }
}

/* The end of pass p for one work-group of a row: its local histogram added into the row's; then
   the group that finishes last (the row's counter of finished groups) scans the row's histogram,
   writes the state of pass p + 1, readies the counters and histogram for it, and (topk_fused, a
   `ready` word) marks the state ready. No group waits for another: each adds, fences and counts
   itself done. Every access to what the groups of a pass share is atomic (the histogram and
   counters: read and zeroed by exchange), and the state alternates between two copies
   (state_copy), so no plain access of one group meets another group's in the same pass.
   The branch of the last group ends with a barrier and the kernels have nothing after this step:
   PoCL 3.0 runs a work-item 0 block that follows a branch holding barriers for every work-item
   of the group, or for none, where the kernel also returns early (tests/test_pocl_faults.py);
   run twice, the counter resets here would undo the next pass's counts. */
STEP void finish_pass(row_state st, uint p, uint pos_bits, uint groups_per_row, pass_io io,
                      __global row_state* state_next, __global volatile uint* ready,
                      pass_locals loc, uint lid)
{
    INDEX_T hd[RPT];
    if (finished_last(!(st.flags & F_LAST), groups_per_row, loc.hist, io.hist, io.counters,
                      loc.last, hd, lid)) {
        const row_state s = next_state(st, hd, p, pos_bits, io.cap, loc.iscratch, loc.state, lid);
        if (lid == 0) {
            *state_next = s;
            COUNTER_TAKE(io.counters + 3);
            COUNTER_TAKE(io.counters + 1 + (p & 1));   /* pass p + 2 writes candidates with it */
            if (ready)
                release_store(ready, p + 1);   /* after the state and the counters */
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
% if sample:

/* topk_pass_t selected the candidates (F_SKIP in the state of pass 0: the state of pass 1): pass 0
   hands that state on (group 0 copies it, and zeroes the candidate counter pass 2 writes with)
   and every group returns: true when it does. */
STEP bool hand_on_skipped(row_state st, __global row_state* state_next,
                          __global INDEX_T* counters, uint g, uint lid)
{
    if (!(st.flags & F_SKIP))
        return false;
    if (g == 0 && lid == 0) {
        row_state s = st;
        s.flags &= ~F_SKIP;
        *state_next = s;
        COUNTER_TAKE(counters + 1);   /* pass 2 writes candidates with it */
    }
    return true;
}
% endif
% if passes:

<%def name="pass_kernel(name, p)">\
## One digit pass of the selection: p 0 (counts only), 1, or None (p >= 2 from p_arg)
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ${name}(${steps.pass_params("uint p_arg")})
{
    const uint p = ${"p_arg" if p is None else p};
    const uint row = get_group_id(1);
    const uint g = get_group_id(0);
    const uint rows = get_num_groups(1);
    const uint lid = get_local_id(0);
${steps.pass_locals("loc")}
    const row_state st = *state_copy(temp, state_off, p & 1, rows, row);
    __global row_state* state_next = state_copy(temp, state_off, (p + 1) & 1, rows, row);
% if p == 0 and sample:
    if (hand_on_skipped(st, state_next, row_counters(temp, counters_off, row), g, lid))
        return;
% endif
    if (hand_on_done(st, state_next, g, lid))
        return;
    ${"const " if p is None else ""}pass_filter f = filter_of(st, p, pos_bits, flip);
% if p == 0:
    f.last = f.from_cands = f.write = false;   /* nothing decided yet */
% elif p == 1 and not sample:
    f.from_cands = false;   /* pass 0 writes no candidates */
% endif
    const pass_io io = pass_io_of(p, row, f.from_cands, st.src_count, keys, keys_off, row_len, k,
                                  cap, idx_row_mul, temp, hist_off, counters_off, cand_key0_off,
                                  cand_pos0_off, cand_key1_off, cand_pos1_off, out_key,
                                  out_key_off, out_idx, out_idx_off);
    clear_pass_locals(loc, lid);
% if p == 0:
    count_tiles(io, f, g, groups_per_row, loc.hist, lid);
% else:
    select_tiles(io, f, g, groups_per_row, loc, lid);
% endif
    finish_pass(st, p, pos_bits, groups_per_row, io, state_next, 0, loc, lid);
}
</%def>\
/* Pass 0: counts digit 0 of the row; nothing is taken or written. */
${pass_kernel("topk_pass_0", 0)}

/* Pass 1: reads the row (or, after topk_pass_t, its candidates); takes and writes. */
${pass_kernel("topk_pass_1", 1)}

/* Pass p >= 2 (p from p_arg): reads the row or the candidates of pass p - 1. */
${pass_kernel("topk_pass", None)}
% if fused:

/* topk_fused's start, by work-item 0 for its group: a virtual id from the launch's counter
   (*sync), the pass, row and place in the row it stands for, the wait until the row's state for
   that pass is written (`ready`: the row's passes whose state is written), and one read of that
   state; then a barrier, after which every work-item takes the same id and state from local
   memory. One read for the whole group: its branches on the state (a row done, a pass skipped)
   are uniform by construction, whatever another group writes meanwhile. */
STEP uint start_fused_group(__global volatile uint* sync, uint per_pass, uint groups_per_row,
                            __global uchar* temp, ulong state_off, uint rows, __local uint* l_vid,
                            __local row_state* l_state, uint lid)
{
    if (lid == 0) {
        const uint vid = atomic_inc(sync);
        const uint p = vid / per_pass;
        const uint row = vid % per_pass / groups_per_row;
        __global volatile uint* ready = sync + 1 + row;
        while (load_acquire(ready) < p)
            ;
        *l_vid = vid;
        *l_state = *state_copy(temp, state_off, p & 1, rows, row);
    }
    /* global too: the group then reads what the pass before wrote (its candidates), ordered
       after work-item 0's acquire */
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    return *l_vid;
}

/* A pass with nothing to select in this row (the row done, or pass 0 after topk_pass_t chose the
   candidates: F_SKIP) hands the row's state on to the next pass. Every group of the pass counts
   itself (the row's counter of finished groups, as finish_pass does), and the last one writes
   the state of pass p + 1 (F_SKIP cleared; after F_SKIP also zeroing the candidate counter pass 2
   writes with), zeroes the count and marks the state ready. So a state copy is rewritten only
   after every group of the pass that reads it has read it (a group that handed on at once could
   otherwise read the copy after the pass after next rewrote it). Called by work-item 0. */
STEP void hand_on_fused(row_state st, uint p, uint groups_per_row,
                        __global row_state* state_next, __global INDEX_T* counters,
                        __global volatile uint* ready)
{
    global_fence();   /* this group's read of the state before its count */
    if (COUNTER_ADD(counters + 3, 1) != (INDEX_T)(groups_per_row - 1))
        return;
    global_fence();
    row_state s = st;
% if sample:
    if (st.flags & F_SKIP) {
        s.flags &= ~F_SKIP;
        COUNTER_TAKE(counters + 1);   /* pass 2 writes candidates with it */
    }
% endif
    *state_next = s;
    COUNTER_TAKE(counters + 3);
    release_store(ready, p + 1);   /* after the state it handed on */
}

/* Every pass of a call in one launch (after topk_init, and the threshold pass when there is one):
   the work-groups take virtual ids from an atomic counter, pass by pass (id v: pass
   v / (rows x groups_per_row), then row, then group), and a group of pass p > 0 waits until its
   row's state for pass p is written (`ready`, set by the group that writes the state: the last
   group of the pass to finish). A group waits only for groups with smaller ids, which have
   started and wait only for smaller ids in turn: no assumption about which work-groups run
   together (as onesweep's os_fused). The pass itself is the steps of the kernels above, p from
   the id. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void topk_fused(${steps.pass_params("uint rows, ulong sync_off")})
{
    const uint lid = get_local_id(0);
${steps.pass_locals("loc")}
    __local uint l_vid;
    __global volatile uint* sync = AT(volatile uint, sync_off);
    const uint per_pass = rows * groups_per_row;
    const uint vid = start_fused_group(sync, per_pass, groups_per_row, temp, state_off, rows,
                                       &l_vid, loc.state, lid);
    const uint p = vid / per_pass;
    const uint row = vid % per_pass / groups_per_row;
    const uint g = vid % groups_per_row;
    __global volatile uint* ready = sync + 1 + row;
    const row_state st = *loc.state;
    __global row_state* state_next = state_copy(temp, state_off, (p + 1) & 1, rows, row);
% if sample:
    const bool hand_on = (st.flags & F_DONE) || (p == 0 && (st.flags & F_SKIP));
% else:
    const bool hand_on = (st.flags & F_DONE) != 0;
% endif
    if (hand_on) {
        if (lid == 0)
            hand_on_fused(st, p, groups_per_row, state_next, row_counters(temp, counters_off, row),
                          ready);
        return;
    }
    pass_filter f = filter_of(st, p, pos_bits, flip);
    if (p == 0)
        f.last = f.from_cands = f.write = false;   /* nothing decided yet */
% if not sample:
    if (p == 1)
        f.from_cands = false;                      /* pass 0 writes no candidates */
% endif
    const pass_io io = pass_io_of(p, row, f.from_cands, st.src_count, keys, keys_off, row_len, k,
                                  cap, idx_row_mul, temp, hist_off, counters_off, cand_key0_off,
                                  cand_pos0_off, cand_key1_off, cand_pos1_off, out_key,
                                  out_key_off, out_idx, out_idx_off);
    clear_pass_locals(loc, lid);
    if (p == 0)
        count_tiles(io, f, g, groups_per_row, loc.hist, lid);
    else
        select_tiles(io, f, g, groups_per_row, loc, lid);
    finish_pass(st, p, pos_bits, groups_per_row, io, state_next, ready, loc, lid);
}
% endif
% endif
% if sort_size:

${common.bitonic_sort_fn("bitonic_sort_pairs", "KEY_T", tie_t="OUT_INDEX_T", carry_t="KEY_T")}

/* The row's k pairs as (order key, key, index), padded to size with pairs behind every pair. */
STEP void load_pairs(__local KEY_T* lsel, __local KEY_T* lkey, __local OUT_INDEX_T* lpos,
                     const __global KEY_T* sel_key, const __global OUT_INDEX_T* sel_idx,
                     INDEX_T k, uint size, KEY_T flip, uint lid)
{
    for (uint i = lid; i < size; i += WG) {
        if (i < (uint)k) {
            const KEY_T x = sel_key[i];
            lkey[i] = x;
            lsel[i] = order_key(x, flip);
            lpos[i] = sel_idx[i];
        } else {
            lkey[i] = (KEY_T)0;
            lsel[i] = (KEY_T)~(KEY_T)0;   /* padding sorts behind every pair */
            lpos[i] = (OUT_INDEX_T)~(OUT_INDEX_T)0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* sorted=True for k <= sort_size: one group per row sorts its k selected pairs by (sel, pos) in
   local memory (bitonic), and writes keys and row positions. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void topk_sort_rows(const __global KEY_T* restrict sel_key, ulong sel_key_off,
                    const __global OUT_INDEX_T* restrict sel_idx, ulong sel_idx_off,
                    INDEX_T k, KEY_T flip,
                    __global KEY_T* restrict out_key, ulong out_key_off,
                    __global IDX_T* restrict out_idx, ulong out_idx_off)
{
    const uint row = get_group_id(0);
    const uint lid = get_local_id(0);
    __local KEY_T lsel[${sort_size}];
    __local KEY_T lkey[${sort_size}];
    __local OUT_INDEX_T lpos[${sort_size}];
    uint size = 1;
    while (size < (uint)k)
        size <<= 1;
    load_pairs(lsel, lkey, lpos, sel_key + sel_key_off + (size_t)row * k,
               sel_idx + sel_idx_off + (size_t)row * k, k, size,
               flip, lid);
    bitonic_sort_pairs(lsel, lpos, lkey, size, lid);
    for (uint i = lid; i < (uint)k; i += WG) {
        out_key[out_key_off + (size_t)row * k + i] = lkey[i];
        out_idx[out_idx_off + (size_t)row * k + i] = (IDX_T)lpos[i];
    }
}
% endif

/* One work-group per row does the whole selection (rows the planner deems small): every pass
   re-reads the row (from the caches, for such rows), counts its candidates in local memory and
   resolves the next pivot there; taken elements get slots from a local counter. Sorted (a
   program with sort_size), the selection is sorted in local memory before it is written; else it
   goes straight to the outputs. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void topk_single(const __global KEY_T* restrict keys, ulong keys_off, INDEX_T row_len, INDEX_T k,
                 uint pos_bits, uint digits, KEY_T flip,
                 __global KEY_T* restrict out_key, ulong out_key_off,
                 __global IDX_T* restrict out_idx, ulong out_idx_off)
{
    const uint row = get_group_id(0);
    const uint lid = get_local_id(0);
    const __global KEY_T* src = keys + keys_off + (size_t)row * row_len;
    out_key += out_key_off + (size_t)row * k;
    out_idx += out_idx_off + (size_t)row * k;
    __local uint lhist[RADIX];
    __local INDEX_T iscratch[WG];
    __local row_state lstate;
    __local uint l_out;
% if sort_size:
    __local KEY_T lsel[${sort_size}];
    __local KEY_T lkey[${sort_size}];
    __local OUT_INDEX_T lpos[${sort_size}];
% endif
    if (lid == 0)
        l_out = 0;
    row_state st = first_state(k, row_len);
    /* a row of one tile is loaded once, and stays in registers for every pass */
    const bool one_tile = row_len <= TILE;
    KEY_T x[IPT];
    if (one_tile) {
        const INDEX_T base = 0;
        load_row_keys(x, src, base, row_len, row_len == TILE, lid);
    }
    for (uint p = 0; p <= digits; ++p) {
        for (uint j = 0; j < RPT; ++j)
            lhist[j * WG + lid] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        pass_filter f = filter_of(st, p, pos_bits, flip);
        f.from_cands = f.write = false;
        for (INDEX_T base = 0; base < row_len; base += TILE) {
            const bool full = base + TILE <= row_len;
            if (!one_tile)
                load_row_keys(x, src, base, row_len, full, lid);
            for (uint i = 0; i < IPT; ++i) {
                const INDEX_T pi = ELEM(i);
                const KEY_T sel = order_key(x[i], flip);
                if (classify(sel, pi, full || pi < row_len, f, lhist, lid) == 1u) {
                    const uint o = atomic_inc(&l_out);
% if sort_size:
                    lsel[o] = sel;
                    lkey[o] = x[i];
                    lpos[o] = (OUT_INDEX_T)pi;
% else:
                    out_key[o] = x[i];
                    out_idx[o] = (IDX_T)pi;
% endif
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (f.last)
            break;
        INDEX_T hd[RPT];
        for (uint j = 0; j < RPT; ++j)
            hd[j] = lhist[lid * RPT + j];
        st = next_state(st, hd, p, pos_bits, 0, iscratch, &lstate, lid);
    }
% if sort_size:
    uint size = 1;
    while (size < (uint)k)
        size <<= 1;
    for (uint j = 0; j < (size + WG - 1) / WG; ++j) {
        const uint i = j * WG + lid;
        if (i >= (uint)k && i < size) {
            lkey[i] = (KEY_T)0;
            lsel[i] = (KEY_T)~(KEY_T)0;   /* padding sorts behind every pair */
            lpos[i] = (OUT_INDEX_T)~(OUT_INDEX_T)0;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    bitonic_sort_pairs(lsel, lpos, lkey, size, lid);
    for (uint j = 0; j < (size + WG - 1) / WG; ++j) {
        const uint i = j * WG + lid;
        if (i < (uint)k) {
            out_key[i] = lkey[i];
            out_idx[i] = (IDX_T)lpos[i];
        }
    }
% endif
}
% if passes:

/* The global-sort route (sorted=True, k above the local sort): the row of each selected element
   from its index in the whole batch, then the keys and row positions gathered by that index. */
__kernel void topk_row_of(const __global OUT_INDEX_T* restrict gidx, __global uint* restrict row_of,
                          ulong m, OUT_INDEX_T row_len)
{
    const size_t i = get_global_id(0);
    if (i < m)
        row_of[i] = (uint)(gidx[i] / row_len);
}

__kernel void topk_gather(const __global KEY_T* restrict keys, ulong keys_off,
                          const __global OUT_INDEX_T* restrict gidx, ulong m, OUT_INDEX_T row_len,
                          __global KEY_T* restrict out_key, ulong out_key_off,
                          __global IDX_T* restrict out_idx, ulong out_idx_off)
{
    const size_t i = get_global_id(0);
    if (i < m) {
        const OUT_INDEX_T g = gidx[i];
        out_key[out_key_off + i] = keys[keys_off + g];
        out_idx[out_idx_off + i] = (IDX_T)(g % row_len);
    }
}
% endif
