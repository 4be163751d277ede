/*
 * report/rules/registry.c: every rule of docs/rules.md, one line each. The engine (analysis.c,
 * gpu.c) runs the rules of each phase in this order; a rule's id, advice, phase and code are in
 * its own file beside this one. Adding a rule: its file, its line here, its test
 * (docs/architecture.md, "Adding a rule").
 */
#include "../analysis_int.h"

const struct ss_rule *const ss_rules[] = {
    /* SS_RULE_SITE: per database, one query each on the aggregate */
    &ss_rule_host_sync,
    &ss_rule_sync_copy,
    &ss_rule_pageable_async_copy,
    &ss_rule_memset_pinned,
    &ss_rule_alloc_in_loop,
    &ss_rule_legacy_stream,
    &ss_rule_polling,
    /* SS_RULE_DATABASE: per database, in C */
    &ss_rule_copy_on_compute_stream,
    /* SS_RULE_GPU: per database with a GPU timeline */
    &ss_rule_copy_without_overlap,
    /* SS_RULE_RANKS: across ranks, after the clock alignment */
    &ss_rule_nccl_straggler,
    &ss_rule_rank_imbalance,
};

const size_t ss_nrules = sizeof(ss_rules) / sizeof(ss_rules[0]);
