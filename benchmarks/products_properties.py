"""Properties of benchmarks/products.rasm (a benchmark of claims solved per path):

    rtwo-vm symbolic benchmarks/products.rasm --max-calldata 24 \\
        --properties benchmarks/products_properties.py

Integer claims about a 64-bit product, true on every path: each path's claim is a
multiplication the solver must reason about (as bit-vectors that cannot overflow)."""

import z3

from proofs.symbolic.properties import contract_property


@contract_property("output_is_at_least_word_0_when_the_product_fits")
def at_least(c):
    a, b = c.calldata.word(0), c.calldata.word(8)
    fits = z3.And(c.int(b) >= 1, c.int(a) * c.int(b) + 5 < 2**64)
    return [z3.Implies(z3.And(c.success, fits), c.int(c.output.word(0)) >= c.int(a))]
