"""proofs/symbolic/claimtext.py: a child's SMT-LIB text read back over the parent's symbols,
on a real exploration of examples/counter.rasm. The text is hostile: anything that is not one
term of the supported fragment over the call's placeholders and the listed free variables is
refused by name, before a solver sees it; what is accepted is rebuilt over the path's real
terms (the same terms ``Call`` gives a property in-process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofs.symbolic import Setup, explore, views
from proofs.symbolic.claimtext import MAX_DEPTH, Reader, Refused, fresh_symbols, single_expression
from proofs.symbolic.properties import Call
from reference_vm import assemble
from conftest import BASE_VERSION as V

ROOT = Path(__file__).resolve().parents[1]
COUNTER = assemble((ROOT / "examples" / "counter.rasm").read_text(), V)


@pytest.fixture(scope="module")
def reader_of():
    x = explore(Setup(0x100, {0x100: COUNTER}, version=V))
    view = views.describe(x)
    end = x.ends[0]

    def make(fresh=()):
        return Reader(views.symbols(view, 0), fresh_symbols([list(f) for f in fresh]),
                      views.reals(x, end)), x, end
    return make


def test_a_placeholder_claim_rebuilds_to_the_terms_call_gives(reader_of):
    reader, x, end = reader_of()
    got = reader.term("(= (select rtwo_view_post_0x100 #x0000000000000000) "
                      "(bvadd (select rtwo_view_pre_0x100 #x0000000000000000) #x0000000000000001))",
                      "claim", True)
    call = Call(x, end)
    assert got.eq(call.post.storage[0] == call.pre.storage[0] + 1)


def test_a_free_variable_is_the_parents_own_symbol_whatever_its_name(reader_of):
    reader, x, end = reader_of([("caller", "(_ BitVec 64)", 0)])
    got = reader.term("(= caller rtwo_view_caller)", "claim", True)
    assert not got.arg(0).eq(x.inputs.caller) and got.arg(1).eq(x.inputs.caller)
    assert str(got.arg(0)) == "user_caller"


@pytest.mark.parametrize("text, fragment", [
    ("true) (assert false", "not one SMT-LIB term"),
    ("(and true", "not one SMT-LIB term"),
    ("true true", "not one SMT-LIB term"),
    ("(" * (MAX_DEPTH + 1) + "and" + ")" * (MAX_DEPTH + 1), "not one SMT-LIB term"),
    ("(= caller rtwo_view_caller)", "not a term over the call"),          # not listed: unknown
    ("(forall ((k (_ BitVec 64))) (= k k))", "a quantifier or lambda"),
    ("(= ((_ int2bv 64) (bv2nat rtwo_view_caller)) rtwo_view_caller)", "int_to_bv (z3.Int2BV)"),
    ("(= (div (bv2nat rtwo_view_caller) 2) 1)", "integer division"),
    ("(= 1.5 1.5)", "the sort Real is outside"),
    ("(= (str.len \"ab\") 2)", "outside the supported fragment"),
    ("rtwo_view_caller", "not a Boolean claim"),
])
def test_texts_outside_the_fragment_are_refused_by_name(reader_of, text, fragment):
    reader, _, _ = reader_of()
    with pytest.raises(Refused, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        reader.term(text, "claim", True)


@pytest.mark.parametrize("listed, fragment", [
    ([("r", "Real", 0)], "of sort Real is outside"),
    ([("f", "(_ BitVec 64)", 1)], "a function of its own"),
    ([("rtwo_view_caller", "(_ BitVec 64)", 0)], "is not letters"),
    ([("k", "Int", 0), ("k", "Bool", 0)], "two free variables are named 'k'"),
    ([("k", "Bool")], "malformed"),
])
def test_free_variables_outside_the_fragment_are_refused(listed, fragment):
    with pytest.raises(Refused, match=fragment):
        fresh_symbols([list(f) for f in listed])


def test_one_expression_is_recognised_with_quotes_strings_and_comments():
    assert single_expression('(= |a b)| "x""y)" ; a comment )\n)')
    assert single_expression("true ; trailing")
    assert not single_expression("(= a b) ; c\n (assert false)")
    assert not single_expression('"unterminated')
    assert not single_expression("|unterminated")
    assert not single_expression("a\0")
