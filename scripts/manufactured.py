#!/usr/bin/env python3
"""Derives the manufactured solutions of ferrofem-physics and prints them as Rust and C.

Every problem is written in the pointwise form of Knepley, Rupp & Terrel (2016), eq. (4.1):

    ∫ φ·f0(u, ∇u, a, x) + ∇φ : f1(u, ∇u, a, x) = 0,

whose strong form is f0 − ∇·f1 = 0. Given an exact solution u*, the forcing f is chosen so
that u* satisfies it: f = −∇·f1(u*, ∇u*) + f0_u(u*), where f0_u is the part of f0 that
depends on u (the forcing enters f0 as −f).

Output: a Rust module (the file crates/physics/src/manufactured/generated.rs) with
  * f64 Rust functions `<name>(x, [params,] out)` for the exact solutions, their gradients
    (layout out[c*dim + k] = ∂u_c/∂x_k), the variable coefficient κ(x) and the forcings;
  * the same expressions as CUDA C function bodies (string constants `<NAME>_C`) using the
    `real` type, reading `x[k]` and writing `out[c]`; parameters (kappa, lam, mu, alpha)
    are free names that the Rust side defines as literals in front of the body.
Both languages print the same expression tree (after common-subexpression elimination) in
the same operation order, so their results agree to rounding.

Re-run with:
    python3 scripts/manufactured.py > crates/physics/src/manufactured/generated.rs
"""

import sys

import sympy as sp

X = sp.symbols("x0 x1 x2", real=True)
KAPPA, LAM, MU, ALPHA = sp.symbols("kappa lam mu alpha", real=True)
PI = sp.pi


def coords(dim):
    return list(X[:dim])


def scalar_exact(dim):
    """A smooth, non-polynomial scalar that does not vanish on the boundary of [0,1]^d."""
    x = coords(dim)
    u = sp.sin(PI * x[0] / 2 + sp.Rational(3, 10)) * sp.cos(PI * x[1] / 3)
    if dim == 3:
        u = u * sp.exp(x[2] / 2)
    return [u]


def vector_exact(dim):
    """A vector field with different components (for elasticity)."""
    x = coords(dim)
    if dim == 2:
        return [
            sp.sin(PI * x[0] / 2 + sp.Rational(3, 10)) * sp.cos(PI * x[1] / 3),
            sp.cos(PI * x[0] / 3 - sp.Rational(2, 5)) * sp.sin(PI * x[1] / 2 + sp.Rational(1, 2)),
        ]
    return [
        sp.sin(PI * x[0] / 2 + sp.Rational(3, 10)) * sp.cos(PI * x[1] / 3) * sp.exp(x[2] / 2),
        sp.cos(PI * x[0] / 3 - sp.Rational(2, 5))
        * sp.sin(PI * x[1] / 2 + sp.Rational(1, 2))
        * sp.cos(PI * x[2] / 4),
        sp.exp(x[0] / 2) * sp.cos(PI * x[1] / 4 + sp.Rational(1, 5)) * sp.sin(PI * x[2] / 3 + sp.Rational(7, 10)),
    ]


def kappa_var(dim):
    """The variable coefficient κ(x) = 1 + sin(x0 + 2 x1 [+ 3 x2]) / 2, in [1/2, 3/2]."""
    x = coords(dim)
    arg = x[0] + 2 * x[1]
    if dim == 3:
        arg = arg + 3 * x[2]
    return 1 + sp.sin(arg) / 2


def grad(u, dim):
    x = coords(dim)
    return [sp.diff(uc, xk) for uc in u for xk in x]


def div_rows(f1, ncomp, dim):
    """(∇·f1)_c = Σ_k ∂f1[c*dim+k]/∂x_k."""
    x = coords(dim)
    return [sum(sp.diff(f1[c * dim + k], x[k]) for k in range(dim)) for c in range(ncomp)]


def forcing(problem, dim):
    """f such that f0(u*) − ∇·f1(u*) = 0 with the forcing entering f0 as −f."""
    if problem == "elasticity":
        u = vector_exact(dim)
        du = grad(u, dim)
        tr = sum(du[k * dim + k] for k in range(dim))
        f1 = []
        for i in range(dim):
            for k in range(dim):
                s = MU * (du[i * dim + k] + du[k * dim + i])
                if i == k:
                    s = s + LAM * tr
                f1.append(s)
        return [-d for d in div_rows(f1, dim, dim)]
    u = scalar_exact(dim)
    du = grad(u, dim)
    if problem == "poisson":
        f1 = [KAPPA * g for g in du]
        extra = 0
    elif problem == "varcoef":
        f1 = [kappa_var(dim) * g for g in du]
        extra = 0
    elif problem == "screened":
        f1 = du
        extra = ALPHA * u[0]
    elif problem == "nonlinear":
        f1 = [(1 + u[0] ** 2) * g for g in du]
        extra = 0
    else:
        raise ValueError(problem)
    return [-div_rows(f1, 1, dim)[0] + extra]


# ---------------------------------------------------------------------------------------
# Printing: one recursive printer for both languages, so both evaluate the same tree.


def lit(value, lang):
    s = repr(float(value))
    if lang == "rust":
        return f"{s}_f64" if not s.startswith("-") else f"({s}_f64)"
    return f"(real){s}" if not s.startswith("-") else f"((real){s})"


def emit(e, lang):
    if e == PI:
        return "PI" if lang == "rust" else f"(real){float(sp.pi)!r}"
    if e.is_Symbol:
        name = e.name
        if name.startswith("x") and name[1:].isdigit():
            return f"x[{name[1:]}]"
        return name
    if e.is_Number:
        return lit(e, lang)
    if e.is_Add:
        return "(" + " + ".join(emit(a, lang) for a in e.args) + ")"
    if e.is_Mul:
        args = list(e.args)
        if args[0] == -1:
            rest = sp.Mul(*args[1:], evaluate=False) if len(args) > 2 else args[1]
            return f"(-{emit(rest, lang)})"
        return "(" + "*".join(emit(a, lang) for a in args) + ")"
    if e.is_Pow:
        b, p = e.args
        if p.is_Integer and p > 0 and p <= 4:
            return "(" + "*".join([emit(b, lang)] * int(p)) + ")"
        if p.is_Integer and p < 0 and p >= -4:
            one = lit(1, lang)
            return f"({one}/" + "(" + "*".join([emit(b, lang)] * int(-p)) + "))"
        if p == sp.Rational(1, 2):
            return f"({emit(b, lang)}).sqrt()" if lang == "rust" else f"sqrt({emit(b, lang)})"
        if lang == "rust":
            return f"({emit(b, lang)}).powf({emit(p, lang)})"
        return f"pow({emit(b, lang)}, {emit(p, lang)})"
    if isinstance(e, (sp.sin, sp.cos, sp.exp)):
        fname = type(e).__name__
        if lang == "rust":
            return f"({emit(e.args[0], lang)}).{fname}()"
        return f"{fname}({emit(e.args[0], lang)})"
    raise ValueError(f"cannot print {e!r} ({type(e)})")


def body(exprs, lang, out="out", indent="    "):
    """Statements computing `out[i] = exprs[i]` with shared subexpressions hoisted."""
    tsyms = sp.numbered_symbols("t")
    reps, reduced = sp.cse(exprs, symbols=tsyms, optimizations="basic")
    lines = []
    for s, v in reps:
        if lang == "rust":
            lines.append(f"{indent}let {s.name} = {emit(v, lang)};")
        else:
            lines.append(f"{indent}const real {s.name} = {emit(v, lang)};")
    for i, v in enumerate(reduced):
        lines.append(f"{indent}{out}[{i}] = {emit(v, lang)};")
    return lines


def rust_fn(name, exprs, params, doc):
    args = ["x: &[f64]"] + [f"{p}: f64" for p in params] + ["out: &mut [f64]"]
    lines = [f"/// {doc}", f"pub(crate) fn {name}({', '.join(args)}) {{"]
    lines += body(exprs, "rust")
    lines.append("}")
    return lines


def c_const(name, exprs, doc):
    text = "\n".join(body(exprs, "c", indent="  "))
    return [f"/// {doc} (CUDA C body: reads `x`, writes `out`).", f"pub(crate) const {name}: &str = r#\"", text, '"#;']


def main():
    out = []
    out.append("// @generated by scripts/manufactured.py (sympy); do not edit by hand.")
    out.append("// Re-run: python3 scripts/manufactured.py > crates/physics/src/manufactured/generated.rs")
    out.append("//! Manufactured solutions and forcings derived symbolically (see scripts/manufactured.py).")
    out.append("")
    out.append("#![allow(clippy::all, unused_parens)]")
    out.append("")
    out.append("use std::f64::consts::PI;")
    out.append("")
    for dim in (2, 3):
        items = [
            (f"scalar{dim}_exact", scalar_exact(dim), [], f"Scalar exact solution u* in {dim}-D."),
            (f"scalar{dim}_grad", grad(scalar_exact(dim), dim), [], f"∇u* of the scalar solution in {dim}-D."),
            (f"vector{dim}_exact", vector_exact(dim), [], f"Vector exact solution u* (elasticity) in {dim}-D."),
            (f"vector{dim}_grad", grad(vector_exact(dim), dim), [], f"∇u* of the vector solution in {dim}-D (out[c*dim+k])."),
            (f"kappa{dim}", [kappa_var(dim)], [], f"Variable coefficient κ(x) in {dim}-D."),
            (f"poisson{dim}_forcing", forcing("poisson", dim), ["kappa"], f"f = −κΔu* in {dim}-D."),
            (f"varcoef{dim}_forcing", forcing("varcoef", dim), [], f"f = −∇·(κ(x)∇u*) in {dim}-D."),
            (f"screened{dim}_forcing", forcing("screened", dim), ["alpha"], f"f = αu* − Δu* in {dim}-D."),
            (f"nonlinear{dim}_forcing", forcing("nonlinear", dim), [], f"f = −∇·((1+u*²)∇u*) in {dim}-D."),
            (
                f"elasticity{dim}_forcing",
                forcing("elasticity", dim),
                ["lam", "mu"],
                f"f = −∇·σ(u*) in {dim}-D.",
            ),
        ]
        for name, exprs, params, doc in items:
            out += rust_fn(name, exprs, params, doc)
            out.append("")
            out += c_const(name.upper() + "_C", exprs, doc)
            out.append("")
    sys.stdout.write("\n".join(out).rstrip() + "\n")


if __name__ == "__main__":
    main()
