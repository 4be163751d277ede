/*
 * report/rules/registry.c: every rule of docs/rules.md, one line each. A rule's id, advice,
 * phase and code are in its own file beside this one (rules/NAME.c defines ss_rule_NAME); the
 * engine (analysis.c, gpu.c) runs the rules of each phase in this table's order. Adding a rule:
 * its file, its line here and in report/Makefile.am's RULES, its test (docs/architecture.md,
 * "Adding a rule").
 */
#include "../analysis_int.h"

/* X(NAME): the rule ss_rule_NAME, grouped by phase. */
#define SS_RULE_TABLE(X)                                                                           \
	/* SS_RULE_SITE: per database, one query each on the aggregate */                          \
	X(host_sync)                                                                               \
	X(sync_copy)                                                                               \
	X(pageable_async_copy)                                                                     \
	X(memset_pinned)                                                                           \
	X(alloc_in_loop)                                                                           \
	X(stack_limit_in_loop)                                                                     \
	X(async_alloc_slow)                                                                        \
	X(pool_trim_in_loop)                                                                       \
	X(legacy_stream)                                                                           \
	X(polling)                                                                                 \
	X(graph_instantiate_in_loop)                                                               \
	X(module_load_in_loop)                                                                     \
	/* SS_RULE_DATABASE: per database, in C */                                                 \
	X(copy_on_compute_stream)                                                                  \
	X(managed_round_trip)                                                                      \
	X(small_copies_in_loop)                                                                    \
	X(private_context)                                                                         \
	/* SS_RULE_GPU: per database with a GPU timeline */                                        \
	X(copy_without_overlap)                                                                    \
	X(copy_held_by_event)                                                                      \
	X(upload_behind_download)                                                                  \
	X(host_func_blocks_stream)                                                                 \
	X(graph_exec_shared)                                                                       \
	/* SS_RULE_RANKS: across ranks, after the clock alignment */                               \
	X(nccl_straggler)                                                                          \
	X(rank_imbalance)

#define SS_RULE_DECLARE(name) extern const struct ss_rule ss_rule_##name;
SS_RULE_TABLE(SS_RULE_DECLARE)
#undef SS_RULE_DECLARE

const struct ss_rule *const ss_rules[] = {
#define SS_RULE_ADDRESS(name) &ss_rule_##name,
    SS_RULE_TABLE(SS_RULE_ADDRESS)
#undef SS_RULE_ADDRESS
};

const size_t ss_nrules = sizeof(ss_rules) / sizeof(ss_rules[0]);
