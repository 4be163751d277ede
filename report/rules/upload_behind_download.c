/*
 * report/rules/upload_behind_download.c: the upload-behind-download rule (docs/rules.md), a
 * GPU-timeline rule (SS_RULE_GPU): uploads queued on the same stream as the downloads, each
 * held behind a download that itself waited for the compute. A GPU copies each direction on an
 * engine of its own ("devices with two copy engines can overlap copies to and from the
 * device", the CUDA programming guide), but work in one stream runs in issue order: a pipeline
 * whose one "DMA" stream carries both puts the next page's upload behind this page's download,
 * and that download waits for this page's kernel, so upload, compute and download take turns
 * (examples/corpus d48: a transfer module configured with one queue). The line to change is the
 * download's: on a stream of its own it no longer holds the uploads.
 *
 * Per async copy call U (E1, at least COPY_MIN_BYTES) whose previous copy call on its stream
 * (E1, any thread) was a download D of at least COPY_MIN_BYTES, such that on the GPU timeline:
 *   - U's copy is an upload and D's a download, on one stream that is not the device's compute
 *     stream (copy-on-compute-stream's and copy-without-overlap's case);
 *   - U was held by D: issued at least HELD_MIN_NS before D's copy ended, and started within
 *     copy_start_slack (gpu.c: 50 us or a quarter of U) after it;
 *   - D waited for the compute: it started within the same slack after a kernel of the device
 *     ended (a download that ran unprompted held nothing the compute needed);
 *   - the compute waited for U: no kernel ran on the device while U ran, and the compute
 *     stream's next kernel was launched before U ended.
 * The cost is, per held upload, the part of D's copy it waited behind (from its call or D's
 * start, whichever is later, to D's end): what a stream of its own for the downloads wins back
 * at most. Named at D's site. Steady copies only; with the timeline sampled, the steps it saw
 * whole, scaled (GPU-IDLE-4).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis_int.h"
#include "../commands.h"

extern const struct ss_rule ss_rule_upload_behind_download;

/* below: a result read or a parameter, whose latency no overlap hides */
#define COPY_MIN_BYTES (64 * 1024)
/* an upload queued less than this before the download ended was not held by it */
#define HELD_MIN_NS 50000LL

/* The async copies of at least ?1 bytes, by stream and time, with their sites. */
#define STREAM_COPIES_SQL                                                                          \
	"SELECT c.stream, c.start_ns, c.tid, coalesce(s.text, '" NO_SITE "')"                      \
	" FROM calls c JOIN apis a ON a.id = c.api_id LEFT JOIN sites s ON s.id = c.site_id"       \
	" WHERE c.class = 'E1' AND a.name LIKE '%emcpy%' AND coalesce(c.bytes, 0) >= ?1"           \
	" AND c.stream IS NOT NULL ORDER BY c.stream, c.start_ns, c.id"

struct stream_copy {
	long long stream, start, tid;
	char *site;
};
static int load_copies(struct loader *ld, struct db_state *st, struct stream_copy **v, size_t *n)
{
	size_t cap = 0;
	sqlite3_stmt *stmt;
	int rc, code = prepare(ld, st, STREAM_COPIES_SQL, &stmt);

	if (code != SS_EXIT_OK)
		return code;
	sqlite3_bind_int64(stmt, 1, COPY_MIN_BYTES);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct stream_copy c = {sqlite3_column_int64(stmt, 0),
					sqlite3_column_int64(stmt, 1),
					sqlite3_column_int64(stmt, 2),
					xstrdup((const char *)sqlite3_column_text(stmt, 3))};

		if (!c.site || !PUSH(*v, *n, cap, c)) {
			free(c.site);
			sqlite3_finalize(stmt);
			return out_of_memory(ld);
		}
	}
	return end_rows(ld, st, stmt, rc, SS_EXIT_OK);
}

/* How long upload U (issued at ISSUED) waited behind download D (the conditions at the top of
 * this file), or 0 when it did not. */
static long long held_behind(const struct gpu_rows *g, const struct correlated *u,
			     const struct copy_row *ucopy, long long issued,
			     const struct correlated *d, const struct copy_row *dcopy)
{
	long long compute = compute_stream_of(g, u->device);

	if (!ucopy || !dcopy || !ucopy->h2d || dcopy->h2d || ucopy->stream != dcopy->stream ||
	    ucopy->stream == compute || u->device != d->device)
		return 0;
	if (issued > d->e - HELD_MIN_NS || u->s < d->e || u->s - d->e > copy_start_slack(u))
		return 0; /* not queued behind the download, or held by something else after it */
	if (!kernel_between(g, d->device, d->s - copy_start_slack(d), d->s))
		return 0; /* the download did not wait for the compute */
	if (kernel_between(g, u->device, u->s, u->e))
		return 0; /* a kernel ran beside the upload */
	const struct kernel_row *next = next_kernel_on_stream(g, u->device, compute, u->e);
	if (!next || next->launch_ns < 0 || next->launch_ns >= u->e)
		return 0; /* no compute waited behind it */
	if (timeline_off_between(g, issued < d->s ? issued : d->s, u->e))
		return 0;
	return d->e - (issued > d->s ? issued : d->s);
}

static int add_findings(struct loader *ld, struct db_state *st, struct held_site *sites,
			size_t nsites, size_t seen, size_t steady)
{
	int code = SS_EXIT_OK;
	char scaled[128];

	held_scaled_note(scaled, sizeof(scaled), seen, steady);
	for (size_t i = 0; code == SS_EXIT_OK && i < nsites; i++) {
		struct held_site *s = &sites[i];
		long long median = held_site_finish(s, seen, steady);

		add_held_finding(
		    ld, st, &ss_rule_upload_behind_download, s, s->bytes, s->held,
		    format("%lld uploads were queued on this download's stream and waited behind "
			   "it, %.3f ms in all (median %.3f ms), while the download waited for "
			   "the compute and the compute for the uploads: a stream runs its copies "
			   "one after another, where a stream for each direction lets the copy "
			   "engines run them at once%s",
			   s->n, ms(s->held), ms(median), scaled),
		    &code);
	}
	return code;
}

static int upload_behind_download_rule(struct loader *ld, struct db_state *st,
				       const struct gpu_rows *g)
{
	struct stream_copy *calls = NULL;
	const struct copy_row **copies = NULL;
	struct held_site *sites = NULL;
	struct call_rows j = {0};
	size_t ncalls = 0, nsites = 0, cap_sites = 0;
	int code = g->ncopies ? load_copies(ld, st, &calls, &ncalls) : SS_EXIT_OK;

	if (code == SS_EXIT_OK && ncalls > 1)
		code = call_rows_open(ld, st, g, &j);
	if (code != SS_EXIT_OK || !j.by_thread)
		goto done;
	copies = copies_by_correlation(g);
	if (!copies) {
		code = out_of_memory(ld);
		goto done;
	}
	for (size_t i = 1; code == SS_EXIT_OK && i < ncalls; i++) {
		const struct stream_copy *u = &calls[i], *d = &calls[i - 1];

		if (!ss_same_stream(u->stream, u->tid, d->stream, d->tid) ||
		    !call_rows_steady_seen(st, &j, u->start))
			continue;
		const struct correlated *ur = call_rows_of(st, &j, u->tid, u->start);
		const struct correlated *dr = call_rows_of(st, &j, d->tid, d->start);
		if (!ur || !dr)
			continue;
		const struct copy_row *uc =
		    copy_of_correlation(copies, g->ncopies, ur->correlation);
		long long held =
		    held_behind(g, ur, uc, u->start, dr,
				copy_of_correlation(copies, g->ncopies, dr->correlation));
		if (held <= 0)
			continue;
		struct held_site *site = held_site(&sites, &nsites, &cap_sites, d->site);
		if (!site || !held_site_add(site, &st->steps, u->start, held, 0)) {
			code = out_of_memory(ld);
			break;
		}
		site->bytes += uc->bytes;
	}
	if (code == SS_EXIT_OK)
		code = add_findings(ld, st, sites, nsites, j.seen, ss_steps_steady(&st->steps));
done:
	for (size_t i = 0; i < ncalls; i++)
		free(calls[i].site);
	free(calls);
	free((void *)copies);
	held_sites_free(sites, nsites);
	call_rows_close(&j);
	return code;
}

const struct ss_rule ss_rule_upload_behind_download = {
    .id = "upload-behind-download",
    .advice = "Queue the downloads on a stream of their own (made once, waiting on an event "
	      "recorded after the kernel that makes their data), not on the uploads' stream: a "
	      "stream runs its copies in the order they were queued, so the next upload waits "
	      "for this download, which waits for the compute; on two streams the GPU's copy "
	      "engines move both directions at once, beside the kernels.",
    .phase = SS_RULE_GPU,
    .cost = SS_COST_ESTIMATE,
    .needs_enqueue_rows = 1, /* the copies are enqueue rows */
    .min_share_permille = 10,
    .run_gpu = upload_behind_download_rule,
};
