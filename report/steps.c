/*
 * report/steps.c: finds a rank's repeating step and tells the phase of a call (steps.h,
 * docs/rules.md "Steady state").
 *
 * Detection from the recording, when the program marks no steps: a step loop makes the same
 * calls in the same order every iteration, so a call the loop makes once per step (the same
 * API from the same site) comes back every P calls of the main thread, P the number of calls
 * in a step. For every (api, site) symbol of the main thread with SS_STEPS_MIN occurrences or
 * more (SS_STEPS_MIN_DETECTED), the gaps between its occurrences (in calls) are compared with their
 * most frequent value; the symbol is periodic when gaps within 1/8 of it cover at least 90% of its
 * span (the first gap, the warm-up iteration's, left out: it makes more calls). Symbols the loop
 * makes several times per step alternate short and long gaps and are not periodic; a kernel
 * launched in a burst has gaps of 1 that cover a small part of the span. The step's period is the
 * one under which periodic symbols cover the most calls (ties: the shorter), and its boundaries are
 * the occurrences of the periodic symbol of that period seen first: the first call of the loop body
 * that comes once per step. The last step holds P calls; what follows is teardown.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "steps.h"

const char *const ss_steps_source_names[SS_STEPS_SOURCES] = {"none", "marked", "detected"};

#define NO_STEP ((size_t)-1)

size_t ss_steps_steady(const struct ss_steps *s)
{
	return s->nsteps > s->first_steady ? s->nsteps - s->first_steady : 0;
}

enum ss_phase ss_steps_phase(const struct ss_steps *s, long long t, size_t *step)
{
	size_t lo = 0, hi;

	*step = NO_STEP;
	if (!s->nsteps) { /* no steps: judged by SS_FALLBACK_MIN_CALLS, inside the work (STEPS-3) */
		if (s->has_work && t < s->work_first_ns)
			return SS_PHASE_SETUP;
		if (s->has_work && t > s->work_last_ns)
			return SS_PHASE_TEARDOWN;
		return SS_PHASE_STEADY;
	}
	if (t < s->start[0])
		return SS_PHASE_SETUP;
	if (t >= s->start[s->nsteps])
		return SS_PHASE_TEARDOWN;
	hi = s->nsteps; /* the last k with start[k] <= t (STEPS-2) */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->start[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	if (lo < s->first_steady)
		return SS_PHASE_SETUP; /* warm-up */
	*step = lo;
	return SS_PHASE_STEADY;
}

int ss_steps_recurring(const struct ss_steps *s, long long steps, long long calls)
{
	size_t steady = ss_steps_steady(s);
	long long need;

	if (!s->nsteps)
		return calls >= SS_FALLBACK_MIN_CALLS;
	if (s->second) { /* STEPS-6: either loop's sites, judged against the shorter loop */
		size_t first = s->second > s->first_steady ? s->second - s->first_steady : 0,
		       next = s->nsteps - s->second;

		steady = first < next ? first : next;
	}
	need = ((long long)steady * SS_RECURRING_PERCENT + 99) / 100;
	if (need < 2)
		need = 2;
	return steps >= need;
}

int ss_steps_spread(const struct ss_steps *s, long long steps, long long first, long long last)
{
	long long steady = (long long)ss_steps_steady(s), begin = (long long)s->first_steady;

	if (!s->nsteps || steady < 4 * SS_SPREAD_MIN_STEPS || steps < SS_SPREAD_MIN_STEPS ||
	    first < begin || last < first)
		return 0;
	/* first in [begin, begin + steady/4), last in [begin + 3*steady/4, nsteps) */
	return (first - begin) * 4 < steady && (last - begin + 1) * 4 > 3 * steady;
}

int ss_steps_bursts(const struct ss_steps *s, long long steps, long long calls, long long first,
		    long long last)
{
	long long steady = (long long)ss_steps_steady(s);

	return s->nsteps && steps >= 2 && calls >= SS_BURST_MIN_CALLS * steps && first >= 0 &&
	       last > first && (last - first) * 3 >= steady;
}

size_t ss_steps_slice(const struct ss_steps *s, long long t)
{
	size_t k = SS_FALLBACK_SLICES - 1;

	if (s->nsteps || !s->has_work || t < s->work_first_ns || t > s->work_last_ns)
		return (size_t)-1;
	while (k > 0 && t < s->work_slice_ns[k])
		k--;
	return k;
}

int ss_steps_fallback_recurs(const struct ss_steps *s, long long calls, long long slices,
			     long long first, long long last)
{
	if (s->nsteps)
		return 1;
	if (!s->has_work)
		return calls >= SS_FALLBACK_MIN_CALLS; /* no work to slice: every call is steady */
	return calls >= SS_FALLBACK_MIN_CALLS && slices >= SS_FALLBACK_MIN_SLICES && first >= 0 &&
	       (last - first + 1) * 2 >= SS_FALLBACK_SLICES;
}

static int compare_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* The median duration of the steady steps (the lower middle), from first_steady. */
static int median_step(struct ss_steps *s)
{
	size_t steady, n = 0;
	long long *d;

	steady = ss_steps_steady(s);
	d = malloc((steady ? steady : 1) * sizeof(*d));
	if (!d)
		return -1;
	for (size_t k = s->first_steady; k < s->nsteps; k++)
		d[n++] = s->start[k + 1] - s->start[k];
	qsort(d, n, sizeof(*d), compare_ll);
	s->step_ns = n ? d[(n - 1) / 2] : -1;
	free(d);
	return 1;
}

/* The warm-up (the first step, where there are enough) and the median steady step. */
static int finish(struct ss_steps *s)
{
	s->first_steady = s->nsteps >= SS_WARMUP_MIN_STEPS ? 1 : 0;
	return median_step(s);
}

/* "ProfilerStep#12" -> "ProfilerStep", "step 3" -> "step": numbered instances are one name. */
static size_t base_length(const char *name)
{
	size_t n = strlen(name);

	while (n && name[n - 1] >= '0' && name[n - 1] <= '9')
		n--;
	while (n && strchr("#_-: .", name[n - 1]))
		n--;
	return n;
}

static int says_step(const char *name, size_t len)
{
	for (size_t i = 0; i + 4 <= len; i++)
		if (strncasecmp(name + i, "step", 4) == 0)
			return 1;
	return 0;
}

static int same_name(const struct ss_step_mark *a, const struct ss_step_mark *b)
{
	size_t la, lb;

	if (a->tid != b->tid || a->is_step != b->is_step)
		return 0;
	if (!a->name || !b->name)
		return a->name == b->name;
	la = base_length(a->name);
	lb = base_length(b->name);
	return la == lb && strncmp(a->name, b->name, la) == 0;
}

int ss_steps_from_marks(struct ss_steps *s, const struct ss_step_mark *marks, size_t n)
{
	size_t best = NO_STEP, best_count = 0, k = 0;
	int best_step = 0;

	memset(s, 0, sizeof(*s));
	s->step_ns = -1;
	for (size_t i = 0; i < n; i++) {
		size_t count = 0, j;
		int usable =
		    marks[i].is_step ||
		    (marks[i].name && says_step(marks[i].name, base_length(marks[i].name)));

		if (!usable)
			continue;
		for (j = 0; j < i && !same_name(&marks[j], &marks[i]); j++)
			;
		if (j < i)
			continue; /* counted at its first instance */
		for (j = i; j < n; j++)
			count += same_name(&marks[j], &marks[i]);
		if (count < SS_STEPS_MIN)
			continue;
		/* syncspy_step first, then the most instances, then the earliest */
		if (best == NO_STEP || marks[i].is_step > best_step ||
		    (marks[i].is_step == best_step && count > best_count)) {
			best = i;
			best_count = count;
			best_step = marks[i].is_step;
		}
	}
	if (best == NO_STEP)
		return 0;
	s->start = malloc((best_count + 1) * sizeof(*s->start));
	if (!s->start)
		return -1;
	for (size_t i = best; i < n; i++)
		if (same_name(&marks[i], &marks[best]))
			s->start[k++] = marks[i].start_ns;
	/* the last step ends where its range ends; syncspy_step's last step and a range left
	 * open last until the recording ends, which says nothing about the step: their start
	 * ends the steps instead, and the last iteration counts as teardown */
	{
		const struct ss_step_mark *last = NULL;

		for (size_t i = n; i-- > best && !last;)
			if (same_name(&marks[i], &marks[best]))
				last = &marks[i];
		if (last->is_step || last->end_ns < last->start_ns)
			k--;
		else
			s->start[k] = last->end_ns;
		if (k == 0 || s->start[k] <= s->start[k - 1])
			s->start[k] = (k ? s->start[k - 1] : last->start_ns) + 1;
	}
	s->nsteps = k;
	if (marks[best].name) {
		size_t len = base_length(marks[best].name);

		s->name = strndup(marks[best].name, len ? len : strlen(marks[best].name));
	} else {
		s->name = strdup("syncspy_step");
	}
	if (!s->name)
		return -1;
	s->source = SS_STEPS_MARKED;
	return finish(s);
}

/* The most frequent of n sorted values (ties: the smaller). */
static long long mode_of(const long long *v, size_t n)
{
	long long best = v[0];
	size_t best_run = 0;

	for (size_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && v[j] == v[i]; j++)
			;
		if (j - i > best_run) {
			best_run = j - i;
			best = v[i];
		}
	}
	return best;
}

static int within(long long gap, long long mode)
{
	long long d = gap > mode ? gap - mode : mode - gap;

	return d <= mode / 8;
}

/* How a symbol repeats, from the strictest to the loosest: its gaps of exactly the period
 * (a loop that makes the same calls every step), within 1/8 of it, within half of the median gap
 * (a loop whose steps vary: a branch taken in some steps, dynamic shapes). */
enum regularity { LOOSE, TIGHT, EXACT };

struct periodic {
	unsigned symbol;
	long long period; /* calls: the most frequent gap (exact, tight), the median (loose) */
	enum regularity how;
	size_t count;	    /* occurrences */
	size_t first, last; /* occurrence indexes of its regular chain */
	size_t first_pos;   /* position of its first chain occurrence */
};

static size_t coverage(const struct periodic *c)
{
	return c->last - c->first + 1;
}

/* Whether candidate j goes with candidate i: the same period for exact and tight ones; for loose
 * ones, about the same number of occurrences (once per step each, the steps' lengths vary). */
static int same_loop(const struct periodic *i, const struct periodic *j)
{
	size_t d;

	if (i->how != LOOSE)
		return j->period == i->period;
	d = i->count > j->count ? i->count - j->count : j->count - i->count;
	return d <= 1 + i->count / 50;
}

/* Whether exact candidate c is a call made every few steps of a loop that tight candidates show
 * (docs/rules.md, "Steady state", detected steps): a loss logged every 10 steps recurs at exactly
 * 10 steps' calls while the steps' own calls vary by the log's few (t175 of examples/corpus). The
 * step is the tight period when more calls repeat at it, a third of c's period or less and spanning
 * half the widest loop, than repeat exactly with c: a call made several times a step (a layer's, a
 * parameter's) is tight at a fraction of the step while the step's other calls are exact. */
static int every_few_steps(const struct periodic *cand, size_t ncand, const struct periodic *c,
			   long long widest_span)
{
	size_t finer = 0, with_c = 0;

	if (c->how != EXACT)
		return 0;
	for (size_t j = 0; j < ncand; j++) {
		if (cand[j].how == EXACT && same_loop(c, &cand[j]))
			with_c++;
		else if (cand[j].how == TIGHT && 3 * cand[j].period <= c->period &&
			 2 * (long long)coverage(&cand[j]) * cand[j].period >= widest_span)
			finer++;
	}
	return finer > with_c;
}

/* Each symbol's positions in calls[0..n), contiguous, in call order (a counting sort): symbol y's
 * are pos[offset[y] .. offset[y] + count[y]). 0 when out of memory (the caller frees). */
static int symbol_positions(const struct ss_step_call *calls, size_t n, unsigned nsymbols,
			    size_t **count, size_t **offset, size_t **pos)
{
	*count = calloc(nsymbols, sizeof(**count));
	*offset = calloc((size_t)nsymbols + 1, sizeof(**offset));
	*pos = malloc(n * sizeof(**pos));
	if (!*count || !*offset || !*pos)
		return 0;
	for (size_t i = 0; i < n; i++)
		(*count)[calls[i].symbol]++;
	for (unsigned y = 0; y < nsymbols; y++)
		(*offset)[y + 1] = (*offset)[y] + (*count)[y];
	memset(*count, 0, nsymbols * sizeof(**count));
	for (size_t i = 0; i < n; i++)
		(*pos)[(*offset)[calls[i].symbol] + (*count)[calls[i].symbol]++] = i;
	return 1;
}

/* The steps' boundaries (STEPS-2) at the calls at positions p[0..c), the last step holding
 * `period` calls (teardown follows); *end: the first call after the loop. 0 when out of memory. */
static int step_boundaries(struct ss_steps *s, const struct ss_step_call *calls, size_t n,
			   const size_t *p, size_t c, size_t period, size_t *end)
{
	size_t last_pos = p[c - 1] + period;

	s->start = malloc((c + 1) * sizeof(*s->start));
	if (!s->start)
		return 0;
	s->nsteps = c;
	for (size_t i = 0; i < c; i++)
		s->start[i] = calls[p[i]].start_ns;
	*end = last_pos < n ? last_pos : n;
	s->start[c] = last_pos < n ? calls[last_pos].start_ns : calls[n - 1].end_ns + 1;
	if (s->start[c] <= s->start[c - 1])
		s->start[c] = s->start[c - 1] + 1;
	return 1;
}

/* One loop among calls[0..n) (STEPS-4 against `thread` calls, the main thread's); *end is the
 * index of the first call after it. */
static int detect_loop(struct ss_steps *s, const struct ss_step_call *calls, size_t n,
		       unsigned nsymbols, size_t thread, size_t *end)
{
	size_t *count = NULL, *offset = NULL, *pos = NULL, ncand = 0;
	long long *gaps = NULL, *sorted = NULL, period = 0;
	struct periodic *cand = NULL;
	const struct periodic *anchor = NULL;
	int found = 0;

	memset(s, 0, sizeof(*s));
	s->step_ns = -1;
	if (n < SS_STEPS_MIN_DETECTED || !nsymbols)
		return 0;
	gaps = malloc(n * sizeof(*gaps));
	sorted = malloc(n * sizeof(*sorted));
	cand = malloc(nsymbols * sizeof(*cand));
	if (!symbol_positions(calls, n, nsymbols, &count, &offset, &pos) || !gaps || !sorted ||
	    !cand) {
		found = -1;
		goto out;
	}

	for (unsigned y = 0; y < nsymbols; y++) {
		const size_t *p = pos + offset[y];
		size_t c = count[y], ngaps, skip, first;
		long long mode, median, span = 0, tight = 0, exact = 0, loose = 0;
		enum regularity how;

		if (c < SS_STEPS_MIN_DETECTED)
			continue;
		ngaps = c - 1;
		for (size_t i = 0; i < ngaps; i++)
			gaps[i] = (long long)(p[i + 1] - p[i]);
		skip = ngaps >= 3 ? 1 : 0; /* the warm-up iteration's gap */
		memcpy(sorted, gaps + skip, (ngaps - skip) * sizeof(*sorted));
		qsort(sorted, ngaps - skip, sizeof(*sorted), compare_ll);
		mode = mode_of(sorted, ngaps - skip);
		median = sorted[(ngaps - skip - 1) / 2];
		for (size_t i = skip; i < ngaps; i++) {
			span += gaps[i];
			tight += within(gaps[i], mode) ? gaps[i] : 0;
			exact += gaps[i] == mode ? gaps[i] : 0;
			loose += 2 * gaps[i] >= median && 2 * gaps[i] <= 3 * median ? gaps[i] : 0;
		}
		if (ngaps - skip < 2)
			continue;
		if (exact * 10 >= span * 9)
			how = EXACT;
		else if (tight * 10 >= span * 9)
			how = TIGHT;
		else if (loose * 10 >= span * 9 && median >= 2)
			how = LOOSE; /* (a burst of one call has gaps of 1: no step) */
		else
			continue;
		if (how == LOOSE)
			mode = median;
		/* the chain: from the first regular gap (and the warm-up step before it) */
		for (first = 0; first < ngaps && !(how == LOOSE ? 2 * gaps[first] >= median &&
								      2 * gaps[first] <= 3 * median
								: within(gaps[first], mode));
		     first++)
			;
		if (first > 0 && gaps[first - 1] > mode)
			first--;
		cand[ncand++] = (struct periodic){y, mode, how, c, first, c - 1, p[first]};
	}
	if (!ncand)
		goto out;
	/*
	 * The loop. Only the most regular candidates that span the loop vote (a call made twice per
	 * step alternates gaps, 9 and 10 in a step of 19 calls: tight at about half the period, but
	 * not exact). Exact and tight: the period under which candidates cover the most calls
	 * (occurrences x period, summed: a loop of 19 calls per step outweighs a setup loop over
	 * five buffers); ties: the shorter. Loose: the number of occurrences most candidates share
	 * (once per step each); ties: the fewer (the longer step).
	 */
	{
		enum regularity best_how = LOOSE;
		long long best_votes = -1;
		const struct periodic *chosen = NULL;

		long long widest_span = 0;

		/* the strictest regularity whose candidates span half the widest loop at least:
		 * a burst of one call at setup (torch creating its stream pool: 128 calls, exactly
		 * one apart) is exact but no loop beside 30 steps of 50 calls that vary */
		for (size_t i = 0; i < ncand; i++)
			if ((long long)coverage(&cand[i]) * cand[i].period > widest_span)
				widest_span = (long long)coverage(&cand[i]) * cand[i].period;
		for (size_t i = 0; i < ncand; i++)
			if (cand[i].how > best_how &&
			    2 * (long long)coverage(&cand[i]) * cand[i].period >= widest_span &&
			    !every_few_steps(cand, ncand, &cand[i], widest_span))
				best_how = cand[i].how;
		for (size_t i = 0; i < ncand; i++) {
			long long votes = 0;

			if (cand[i].how != best_how)
				continue;
			for (size_t j = 0; j < ncand; j++)
				if (cand[j].how == best_how && same_loop(&cand[i], &cand[j]))
					votes += best_how == LOOSE ? 1
								   : (long long)coverage(&cand[j]) *
									 cand[j].period;
			if (votes > best_votes ||
			    (votes == best_votes &&
			     (best_how == LOOSE ? cand[i].count < chosen->count
						: cand[i].period < chosen->period))) {
				best_votes = votes;
				chosen = &cand[i];
			}
		}
		/* the anchor: of the chosen loop's symbols that span it (half the widest coverage
		 * at least: not a setup loop of the same period), the one seen first */
		size_t widest = 0;

		for (size_t i = 0; i < ncand; i++)
			if (cand[i].how == best_how && same_loop(chosen, &cand[i]) &&
			    coverage(&cand[i]) > widest)
				widest = coverage(&cand[i]);
		for (size_t i = 0; i < ncand; i++)
			if (cand[i].how == best_how && same_loop(chosen, &cand[i]) &&
			    2 * coverage(&cand[i]) >= widest &&
			    (!anchor || cand[i].first_pos < anchor->first_pos))
				anchor = &cand[i];
		period = anchor->period;
		/* STEPS-4: a loop that holds a small share of the thread's calls is a burst */
		if ((unsigned long long)coverage(anchor) * (unsigned long long)period *
			SS_STEPS_MIN_SHARE <
		    thread)
			goto out;
	}
	/* the last step holds one period of calls */
	if (!step_boundaries(s, calls, n, pos + offset[anchor->symbol] + anchor->first,
			     anchor->last - anchor->first + 1, (size_t)period, end)) {
		found = -1;
		goto out;
	}
	s->source = SS_STEPS_DETECTED;
	s->anchor = anchor->symbol;
	s->period = (size_t)period;
	found = finish(s);
out:
	free(count);
	free(offset);
	free(pos);
	free(gaps);
	free(sorted);
	free(cand);
	return found;
}

/* STEPS-7: whether symbol z comes once between every two occurrences of y and after the last
 * (both c times, at positions py and pz): once a step, after y. */
static int follows_each(const size_t *py, const size_t *pz, size_t c)
{
	for (size_t i = 0; i < c; i++)
		if (pz[i] < py[i] || (i + 1 < c && pz[i] > py[i + 1]))
			return 0;
	return 1;
}

/* STEPS-7: a symbol and how many times it came, sorted by that count */
struct counted {
	size_t count;
	unsigned symbol;
};

static int compare_counted(const void *a, const void *b)
{
	const struct counted *x = a, *y = b;

	return (x->count > y->count) - (x->count < y->count);
}

/* STEPS-7: a loop whose steps vary in length, found when no symbol repeats regularly: the calls
 * it makes once a step, in the same order every step. */
static int detect_varying_loop(struct ss_steps *s, const struct ss_step_call *calls, size_t n,
			       unsigned nsymbols, size_t thread, size_t *end)
{
	size_t *count = NULL, *offset = NULL, *pos = NULL;
	struct counted *by_count = NULL;
	long long *gaps = NULL;
	size_t nby = 0, best_group = 0;
	unsigned anchor = 0;
	int found = 0;

	memset(s, 0, sizeof(*s));
	s->step_ns = -1;
	if (n < SS_STEPS_MIN_DETECTED || !nsymbols)
		return 0;
	by_count = malloc(nsymbols * sizeof(*by_count));
	if (!symbol_positions(calls, n, nsymbols, &count, &offset, &pos) || !by_count) {
		found = -1;
		goto out;
	}
	for (unsigned y = 0; y < nsymbols; y++)
		if (count[y] >= SS_STEPS_MIN_DETECTED)
			by_count[nby++] = (struct counted){count[y], y};
	qsort(by_count, nby, sizeof(*by_count), compare_counted);
	/* each symbol with the ones of its count that follow it once a step: the group with the
	 * most symbols (ties: the fewer steps, the longer ones; then the one seen first) */
	for (size_t a = 0, from = 0; a < nby; a++) {
		unsigned y = by_count[a].symbol;
		size_t group = 1;

		while (by_count[from].count < count[y])
			from++; /* the first symbol of y's count */
		for (size_t b = from; b < nby && by_count[b].count == count[y]; b++) {
			unsigned z = by_count[b].symbol;

			if (z != y && follows_each(pos + offset[y], pos + offset[z], count[y]))
				group++;
		}
		if (group < SS_STEPS_MIN_GROUP)
			continue;
		if (!best_group || group > best_group ||
		    (group == best_group &&
		     (count[y] < count[anchor] ||
		      (count[y] == count[anchor] && pos[offset[y]] < pos[offset[anchor]])))) {
			best_group = group;
			anchor = y;
		}
	}
	if (!best_group)
		goto out;
	{
		const size_t *p = pos + offset[anchor];
		size_t c = count[anchor];

		gaps = malloc((c - 1) * sizeof(*gaps));
		if (!gaps) {
			found = -1;
			goto out;
		}
		for (size_t i = 0; i + 1 < c; i++)
			gaps[i] = (long long)(p[i + 1] - p[i]);
		qsort(gaps, c - 1, sizeof(*gaps), compare_ll);
		size_t median = (size_t)gaps[(c - 2) / 2]; /* the median step, in calls */

		/* STEPS-4: a loop that holds a small share of the thread's calls is a burst */
		if ((p[c - 1] - p[0] + median) * SS_STEPS_MIN_SHARE < thread)
			goto out;
		s->period = median;
		/* the last step holds the median step's calls */
		if (!step_boundaries(s, calls, n, p, c, median, end)) {
			found = -1;
			goto out;
		}
	}
	s->source = SS_STEPS_DETECTED;
	s->anchor = anchor;
	s->varies = 1;
	found = finish(s);
out:
	free(count);
	free(offset);
	free(pos);
	free(by_count);
	free(gaps);
	return found;
}

int ss_steps_detect(struct ss_steps *s, const struct ss_step_call *calls, size_t n,
		    unsigned nsymbols)
{
	struct ss_steps after;
	size_t end = n, after_end = 0;
	int found = detect_loop(s, calls, n, nsymbols, n, &end);

	if (found == 0) /* STEPS-7 */
		found = detect_varying_loop(s, calls, n, nsymbols, n, &end);

	if (found != 1 || end >= n)
		return found;
	/* STEPS-6: a second loop after the first (training, then sampling or evaluation) */
	int second = detect_loop(&after, calls + end, n - end, nsymbols, n, &after_end);

	if (second == 0) /* STEPS-7: a decoder's tokens, an evaluation of varying inputs */
		second = detect_varying_loop(&after, calls + end, n - end, nsymbols, n, &after_end);

	if (second < 0) {
		ss_steps_free(s);
		return -1;
	}
	/* ... that lasts a tenth of the first at least, and gives the GPU work every step: a
	 * teardown's burst of frees or stream destroys over buffers repeats exactly too */
	if (second == 1) {
		size_t work = 0;

		for (size_t i = end; i < after_end + end; i++)
			work += calls[i].work && calls[i].start_ns >= after.start[0];
		if (work < after.nsteps ||
		    (after.start[after.nsteps] - after.start[0]) * SS_STEPS_MIN_SHARE <
			s->start[s->nsteps] - s->start[0])
			second = 0;
	}
	if (second == 1) {
		long long *start = malloc((s->nsteps + after.nsteps + 1) * sizeof(*start));

		if (!start) {
			ss_steps_free(&after);
			ss_steps_free(s);
			return -1;
		}
		/* the first loop's last step runs to the second's first (STEPS-2) */
		memcpy(start, s->start, s->nsteps * sizeof(*start));
		memcpy(start + s->nsteps, after.start, (after.nsteps + 1) * sizeof(*start));
		free(s->start);
		s->start = start;
		s->second = s->nsteps;
		s->nsteps += after.nsteps;
		found = finish(s);
	}
	ss_steps_free(&after);
	return found;
}

int ss_steps_adopt(struct ss_steps *own, const struct ss_steps *other)
{
	long long longest = 0, other_steady = other->start[other->first_steady];
	size_t c = own->nsteps;

	while (own->first_steady + 1 < c && own->start[own->first_steady] < other_steady)
		own->first_steady++;
	for (size_t i = own->first_steady; i + 1 < c; i++)
		if (own->start[i + 1] - own->start[i] > longest)
			longest = own->start[i + 1] - own->start[i];
	if (longest > 0 && own->start[c] - own->start[c - 1] > longest)
		own->start[c] = own->start[c - 1] + longest;
	return median_step(own);
}

void ss_steps_free(struct ss_steps *s)
{
	free(s->start);
	free(s->name);
	memset(s, 0, sizeof(*s));
}

void ss_tally_init(struct ss_tally *t)
{
	memset(t, 0, sizeof(*t));
	t->last_step = NO_STEP;
}

void ss_tally_add(struct ss_tally *t, const struct ss_steps *s, long long start_ns, long long ns,
		  long long count)
{
	size_t step;

	if (t->all_n == 0 || ns > t->all_worst)
		t->all_worst = ns;
	t->all_n += count;
	t->all_ns += ns;
	if (ss_steps_phase(s, start_ns, &step) != SS_PHASE_STEADY)
		return;
	if (t->n == 0 || ns > t->worst)
		t->worst = ns;
	t->n += count;
	t->ns += ns;
	if (step != NO_STEP && step != t->last_step) {
		t->steps++;
		t->last_step = step;
	}
}
