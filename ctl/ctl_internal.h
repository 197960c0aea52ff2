/* SPDX-License-Identifier: MIT */
/*
 * Private to ctl/: the layout behind the opaque rt_inline_ctl handle of include/rtune/profile.h. The hot fields come
 * first (rt_inline_ctl_decide, inline in the application, reads them through a cast to struct rt_inline_ctl_hot);
 * everything after them is touched only out of line, on a sampled send.
 */
#ifndef RT_CTL_INTERNAL_H
#define RT_CTL_INTERNAL_H

#include <rtune/profile.h>

#define RT_CTL_MAX_ROUND 64u	/* largest round_samples */
#define RT_CTL_PARK_FACTOR 8u	/* a parked controller samples this many times less */
#define RT_CTL_ROUND_TIMEOUT 8u /* a round ends after this many times 4 * round_samples picks even if a cell is short */
#define RT_CTL_EMPTY_TIMEOUT 2u /* ... or this many when one band has had no sample at all and the other is complete */
#define RT_CTL_IDLE_LOOKS 16u	/* a round with no watched send ends after this many looks outside the bands */
#define RT_CTL_LOOK_BASE 4u	/* frequent looks outside the bands: one in about this many times sample_every sends */
#define RT_CTL_LOOK_MAX 1024u	/* backed off: the mean sends between looks doubles up to this (uniform in 1..2047) */
#define RT_CTL_MAX_BYTES (1u << 20) /* no inline WQE is larger; keeps limit_excl and band arithmetic in range */

/* The samples of one band and one choice in the current round. */
struct rt_ctl_cell {
	uint32_t n;
	uint64_t ns[RT_CTL_MAX_ROUND];
};

struct rt_inline_ctl {
	struct rt_inline_ctl_hot hot; /* must stay first */
	struct rt_inline_ctl_params p;
	uint32_t every;	  /* current mean sampling period (sample_every, times RT_CTL_PARK_FACTOR when parked) */
	uint32_t armed;	  /* the countdown the current sample period started with */
	uint32_t rng;	  /* xorshift32 state of the sample jitter */
	uint32_t rng_out; /* xorshift32 state of the jitter of the looks outside the bands */
	uint32_t lo_bound, hi_bound; /* effective threshold bounds */
	bool has_below, has_above;   /* a move down / up is possible, so that band is watched */
	uint32_t below_lo, below_hi, above_lo, above_hi;
	uint32_t down_to, up_to;       /* threshold after a move down / up */
	bool quiet[2];		       /* [side]: its band had no sample in a round and no size was seen beyond it */
	uint32_t cand[2];	       /* [side]: nearest size seen this round outside that side's band (0 = none) */
	uint32_t outside_looks;	       /* rt_inline_ctl_outside() calls this round */
	uint32_t look_shift;	       /* look period = LOOK_BASE * every << look_shift (<= LOOK_MAX); 0 = frequent */
	bool seen[2], seen_prev[2];    /* [side]: a watched send of that band was picked this round / the last one */
	uint64_t round_win0;	       /* watched sends (st.watched + armed - countdown) when the round began */
	struct rt_ctl_cell cell[2][2]; /* [0 below, 1 above][0 not inline, 1 inline] */
	uint32_t round_picks;	       /* sampling picks this round (a round times out after enough) */
	uint32_t stable_rounds;	       /* consecutive rounds without a move */
	int last_dir;		       /* direction of the move that ended the previous round: -1, 0, +1 */
	int pending_dir;	       /* parked: the direction one round asked for (a second one moves) */
	int blocked_dir;	       /* direction not tried for blocked_rounds rounds (after a revert) */
	uint32_t blocked_rounds;
	struct rt_inline_ctl_state st; /* counters, evidence and moves (threshold/bands filled on read) */
};

#endif
