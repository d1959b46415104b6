"""Properties of one call of examples/proxy.rasm with examples/counter.rasm as its callee at
0x101, for `rtwo-vm symbolic` (0x102, the reverting contract, is left undeployed: that call
cannot run):

    rtwo-vm symbolic examples/proxy.rasm --contract 0x101=examples/counter.rasm \\
        --properties examples/proxy_properties.py

The counter is explored through the CALL: its storage is symbolic like the proxy's.
"""

import z3

from proofs.symbolic.properties import contract_property

COUNTER = 0x101


@contract_property("counter_grows_by_one_through_the_proxy_or_changes_nothing")
def through_the_call(c):
    pre, post = c.pre.storage_at(COUNTER), c.post.storage_at(COUNTER)
    k = c.any_key()
    return [z3.Implies(c.success, z3.Or(post[0] == pre[0] + 1,
                                        c.unchanged_except(address=COUNTER))),
            z3.Implies(c.success, c.unchanged_except(0, address=COUNTER)),
            z3.Implies(c.success, c.unchanged_except()),          # the proxy's own storage
            z3.Implies(z3.Not(c.success), post[k] == pre[k])]


@contract_property("proxy_reports_the_counter_call")
def reports(c):
    pre, post = c.pre.storage_at(COUNTER), c.post.storage_at(COUNTER)
    ok = c.output.word(0)
    return [z3.Implies(c.success, z3.And(c.output.size == 24,
                                         z3.Implies(ok == 1, post[0] == pre[0] + 1),
                                         z3.Implies(ok == 1, c.output.word(8) == post[0]),
                                         z3.Implies(ok == 0, post[0] == pre[0]),
                                         c.output.word(16) == 0))]
