// flush_plugin: a GCC plugin cables-cc loads for every file.  GCC compiles
// `#pragma omp flush` to a machine fence (its __sync_synchronize, or for a
// flush with a memory order __atomic_thread_fence), which orders one
// node's memory only: a flag written and flushed on one node, polled and
// flushed on another, would never be seen.  This pass, run on each
// function as soon as it has a control-flow graph (before the OpenMP
// regions are outlined), turns each such fence into a call of the
// runtime's cables_flush (atomics.c: a cluster acquire and release), as
// cables_atomics.h does for the fences the program writes itself.
#include "gcc-plugin.h"
#include "plugin-version.h"

#include "context.h"
#include "tree.h"
#include "tree-pass.h"
#include "basic-block.h"
#include "function.h"
#include "gimple.h"
#include "gimple-iterator.h"
#include "ggc.h"
#include "memmodel.h"

int plugin_is_GPL_compatible;

// the runtime's function, declared once a compilation (a root of GCC's
// garbage collector: it lives as long as the compilation)
static tree flush_fn;
static const struct ggc_root_tab flush_roots[] = {
    { &flush_fn, 1, sizeof flush_fn, &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
    LAST_GGC_ROOT_TAB,
};

namespace {

tree flush_decl()
{
    if (!flush_fn) {
        flush_fn = build_fn_decl("cables_flush",
                                 build_function_type_list(void_type_node, NULL_TREE));
        DECL_EXTERNAL(flush_fn) = 1;
        TREE_PUBLIC(flush_fn) = 1;
        DECL_ARTIFICIAL(flush_fn) = 1;
        TREE_NOTHROW(flush_fn) = 1; /* (not leaf: it must stay a barrier to the compiler) */
    }
    return flush_fn;
}

// a fence that orders memory: __sync_synchronize, or __atomic_thread_fence
// with an order other than relaxed
bool is_fence(gimple *s)
{
    if (gimple_call_builtin_p(s, BUILT_IN_SYNC_SYNCHRONIZE))
        return true;
    if (!gimple_call_builtin_p(s, BUILT_IN_ATOMIC_THREAD_FENCE))
        return false;
    tree mo = gimple_call_arg(s, 0);
    return !tree_fits_uhwi_p(mo) || (tree_to_uhwi(mo) & MEMMODEL_BASE_MASK) != MEMMODEL_RELAXED;
}

const pass_data flush_pass_data = {
    GIMPLE_PASS, "cables_flush", OPTGROUP_NONE, TV_NONE, PROP_cfg, 0, 0, 0, 0,
};

struct flush_pass : gimple_opt_pass {
    flush_pass(gcc::context *ctxt) : gimple_opt_pass(flush_pass_data, ctxt) {}
    unsigned int execute(function *fun) override
    {
        basic_block bb;
        FOR_EACH_BB_FN(bb, fun)
        {
            for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi); gsi_next(&gsi)) {
                gimple *s = gsi_stmt(gsi);
                if (!is_fence(s))
                    continue;
                gcall *call = gimple_build_call(flush_decl(), 0);
                gimple_set_location(call, gimple_location(s));
                gsi_replace(&gsi, call, false);
            }
        }
        return 0;
    }
    flush_pass *clone() override { return new flush_pass(m_ctxt); }
};

} // namespace

int plugin_init(struct plugin_name_args *info, struct plugin_gcc_version *version)
{
    if (!plugin_default_version_check(version, &gcc_version)) {
        fprintf(stderr, "cables-cc: %s was built for GCC %s, not this compiler's %s: rebuild it "
                        "(make)\n", info->full_name, gcc_version.basever, version->basever);
        return 1;
    }
    struct register_pass_info pass = { new flush_pass(g), "cfg", 1, PASS_POS_INSERT_AFTER };
    register_callback(info->base_name, PLUGIN_PASS_MANAGER_SETUP, NULL, &pass);
    register_callback(info->base_name, PLUGIN_REGISTER_GGC_ROOTS, NULL,
                      const_cast<ggc_root_tab *>(flush_roots));
    return 0;
}
