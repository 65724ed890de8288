//! The language end to end: precedence, functions, errors, evaluation in both precisions,
//! derivatives against finite differences, and CUDA emission.

use ferrofem_expr::{Expr, ExprError, ExprErrorKind, Symbols};

fn xyz() -> Symbols {
    Symbols::new()
        .variable("x")
        .unwrap()
        .variable("y")
        .unwrap()
        .variable("z")
        .unwrap()
}

fn parse(src: &str) -> Expr {
    Expr::parse(src, &xyz()).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn err(src: &str) -> ExprError {
    Expr::parse(src, &xyz()).unwrap_err()
}

/// A deterministic stream of numbers in `[lo, hi)`.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((self.0 >> 11) as f64 / (1u64 << 53) as f64)
    }
}

#[test]
fn precedence_and_associativity() {
    let table: &[(&str, f64)] = &[
        ("2^3^2", 512.0),
        ("-2^2", -4.0),
        ("(-2)^2", 4.0),
        ("2^-1", 0.5),
        ("2^-1*4", 2.0),
        ("-2*3", -6.0),
        ("1-2-3", -4.0),
        ("8/4/2", 1.0),
        ("2*3+4*5", 26.0),
        ("2+3*4^2", 50.0),
        ("--3 + +2", 5.0),
        ("1 + 2 < 4", 1.0),
        ("3 < 2 == 0", 1.0),
        ("1 < 2 < 3", 1.0),
        ("2 >= 2 && 1 != 1", 0.0),
        ("0 || 0.5 && 2", 1.0),
        ("1 || 0 && 0", 1.0),
        ("!0 + !3", 1.0),
        ("!1 < 1", 1.0),
        ("2 <= 1 || 3 > 2", 1.0),
        ("1 == 1 != 0", 1.0),
        (".5 + 1e-3 * 3.0E+6", 3000.5),
        (" ( 1 +\t2 ) *\n3 ", 9.0),
    ];
    for &(src, want) in table {
        assert_eq!(parse(src).constant_value(), Some(want), "{src}");
    }
}

#[test]
fn every_function_and_if() {
    let s = xyz();
    let v = [0.3_f64, -1.7, 2.5];
    let (x, y, z) = (v[0], v[1], v[2]);
    let table: &[(&str, f64)] = &[
        ("sin(x)", x.sin()),
        ("cos(y)", y.cos()),
        ("tan(z)", z.tan()),
        ("asin(x)", x.asin()),
        ("acos(x)", x.acos()),
        ("atan(y)", y.atan()),
        ("atan2(y, x)", y.atan2(x)),
        ("sinh(y)", y.sinh()),
        ("cosh(y)", y.cosh()),
        ("tanh(z)", z.tanh()),
        ("exp(y)", y.exp()),
        ("log(z)", z.ln()),
        ("log10(z)", z.log10()),
        ("sqrt(z)", z.sqrt()),
        ("abs(y)", 1.7),
        ("min(x, y)", y),
        ("max(x, y)", x),
        ("pow(z, x)", z.powf(x)),
        ("floor(y)", -2.0),
        ("ceil(y)", -1.0),
        ("sign(y) + 2*sign(z) + 4*sign(x - x)", 1.0),
        ("if(x > 0, y, z)", y),
        ("if(x - x, y, z)", z),
        ("e^pi", std::f64::consts::E.powf(std::f64::consts::PI)),
    ];
    for &(src, want) in table {
        let e = Expr::parse(src, &s).unwrap();
        assert_eq!(e.eval(&v), want, "{src}");
    }
    assert!(parse("log(-1)").constant_value().unwrap().is_nan());
}

#[test]
fn error_locations() {
    let src = "1 + sin(x) * foo";
    let e = err(src);
    assert_eq!((e.offset, e.len, e.column(src)), (13, 3, 14));
    let known = ["e", "pi", "x", "y", "z"].map(String::from).to_vec();
    assert_eq!(
        e.kind,
        ExprErrorKind::UnknownName {
            name: "foo".into(),
            known
        }
    );
    assert_eq!(e.to_string(), "unknown name `foo` (known: e, pi, x, y, z)");

    let e = err("1 + foo(x)");
    assert_eq!((e.offset, e.len), (4, 3));
    assert!(
        e.to_string()
            .starts_with("unknown function `foo` (available: sin, cos, tan,"),
        "{e}"
    );

    let e = err("2 * atan2(x)");
    assert_eq!((e.offset, e.len), (4, 5));
    assert_eq!(
        e.kind,
        ExprErrorKind::Arity {
            function: "atan2".into(),
            expected: 2,
            got: 1
        }
    );
    assert_eq!(
        err("sin(x, y)").to_string(),
        "function `sin` takes 1 argument, got 2"
    );

    let syntax = |src: &str, offset, len, expected: &str, found: &str| {
        let e = err(src);
        let kind = ExprErrorKind::Syntax {
            expected: expected.into(),
            found: found.into(),
        };
        assert_eq!((e.kind, e.offset, e.len), (kind, offset, len), "{src}");
    };
    syntax("x y", 2, 1, "an operator or end of expression", "y");
    syntax("(x + 1", 6, 0, "`)`", "end of expression");
    syntax("x + 1)", 5, 1, "an operator or end of expression", ")");
    syntax("1 +", 3, 0, "an expression", "end of expression");
    syntax("max(x,)", 6, 1, "an expression", ")");
    syntax("min(x y)", 6, 1, "`,` or `)`", "y");
    syntax("x = 1", 2, 1, "`==`", "=");
    syntax(
        "x $ 1",
        2,
        1,
        "a number, name, operator or parenthesis",
        "$",
    );
    assert_eq!(
        err("1 +").to_string(),
        "expected an expression, found end of expression"
    );
    assert_eq!(
        err("x y").to_string(),
        "expected an operator or end of expression, found `y`"
    );

    for (src, offset) in [("", 0), (" \t\n", 3)] {
        assert_eq!(
            (err(src).kind, err(src).offset, err(src).len),
            (ExprErrorKind::Empty, offset, 0)
        );
    }
    let e = err("2 * 1e");
    assert_eq!(
        (e.kind, e.offset, e.len),
        (ExprErrorKind::InvalidNumber { text: "1e".into() }, 4, 2)
    );

    // Non-ASCII white space (an em space is 3 bytes, 1 column) before the error.
    let src = "x +\u{2003}\u{2003}foo";
    let e = err(src);
    assert_eq!((e.offset, e.len, e.column(src)), (9, 3, 6));
    let src = "x +\n  ü";
    let e = err(src);
    assert_eq!((e.offset, e.len, e.column(src)), (6, 2, 3));

    // The 256th `+` of a long sum makes the tree one level too deep.
    let long = format!("x{}", " + x".repeat(299));
    let e = err(&long);
    assert_eq!(
        (e.kind, e.offset, e.len),
        (ExprErrorKind::TooDeep { limit: 256 }, 1022, 1)
    );
    assert_eq!(
        parse(&format!("x{}", " + x".repeat(255))).eval(&[1.0, 0.0, 0.0]),
        256.0
    );
    let parens = |n| format!("{}x{}", "(".repeat(n), ")".repeat(n));
    assert_eq!(parse(&parens(500)).eval(&[3.0, 0.0, 0.0]), 3.0);
    assert_eq!(
        err(&parens(1100)).kind,
        ExprErrorKind::TooDeep { limit: 256 }
    );
}

#[test]
fn symbols_builder() {
    let s = Symbols::new()
        .variable("x")
        .unwrap()
        .constant("k_1", 2.0)
        .unwrap()
        .variable("T")
        .unwrap();
    assert_eq!(s.variables(), ["x", "T"]);
    assert_eq!(s.names(), ["T", "e", "k_1", "pi", "x"]);
    for bad in ["x", "k_1", "pi", "e", "sin", "if", "2x", "", "a-b", "ü"] {
        let e = s.clone().variable(bad).unwrap_err();
        assert!(
            matches!(e.kind, ExprErrorKind::InvalidSymbol { .. }),
            "{bad}"
        );
        assert_eq!((e.offset, e.len), (0, 0));
    }
    assert_eq!(
        Symbols::new().constant("pi", 3.0).unwrap_err().to_string(),
        "invalid symbol `pi`: reserved for a built-in constant"
    );
    let e = Expr::parse("k_1 * T - x", &s).unwrap();
    assert_eq!(
        (e.num_variables(), e.uses(0), e.uses(1), e.uses(2)),
        (2, true, true, false)
    );
    assert_eq!(e.eval(&[1.0, 3.0]), 5.0);
}

#[test]
fn constant_folding() {
    assert_eq!(
        parse("2*pi").constant_value(),
        Some(2.0 * std::f64::consts::PI)
    );
    let e = parse("x*0");
    assert_eq!((e.constant_value(), e.uses(0)), (None, true));
    assert!(e.eval(&[f64::INFINITY, 0.0, 0.0]).is_nan());
    let e = parse("x + 2*3");
    assert_eq!(
        (e.source(), e.to_cuda(&["a", "b", "c"]).as_str()),
        ("x + 2*3", "(a + ((real)6e0))")
    );
    assert!(!e.uses(1) && !e.uses(7));
    let c = Expr::constant(2.5);
    assert_eq!(
        (c.constant_value(), c.num_variables(), c.source()),
        (Some(2.5), 0, "2.5")
    );
    assert_eq!(c.eval::<f32>(&[]), 2.5);
    assert_eq!(parse("sqrt(-1) + 1").to_cuda(&[]), "(((real)0)/((real)0))");
}

type F = fn(f64, f64, f64) -> f64;

#[test]
fn eval_matches_closures_in_both_precisions() {
    let cases: &[(&str, F)] = &[
        ("x + y*z - x/y", |x, y, z| x + y * z - x / y),
        ("x^2 + y^3 - z^-2", |x, y, z| {
            x * x + y * y * y - 1.0 / (z * z)
        }),
        ("sin(x)*cos(y) + tan(z/4)", |x, y, z| {
            x.sin() * y.cos() + (z / 4.0).tan()
        }),
        ("exp(-x^2 - y^2) * log(1 + z^2)", |x, y, z| {
            (-(x * x) - y * y).exp() * (1.0 + z * z).ln()
        }),
        ("sqrt(x^2 + y^2 + z^2)", |x, y, z| {
            (x * x + y * y + z * z).sqrt()
        }),
        (
            "atan2(y, x) + atan(z) + asin(x/3) + acos(y/3)",
            |x, y, z| y.atan2(x) + z.atan() + (x / 3.0).asin() + (y / 3.0).acos(),
        ),
        ("sinh(x) - cosh(y) * tanh(z)", |x, y, z| {
            x.sinh() - y.cosh() * z.tanh()
        }),
        ("abs(x)^1.5 * log10(2 + y)", |x, y, _| {
            x.abs().powf(1.5) * (2.0 + y).log10()
        }),
        ("min(x, y) + max(y, z) * floor(z) - ceil(x)", |x, y, z| {
            x.min(y) + y.max(z) * z.floor() - x.ceil()
        }),
        ("if(x > y, x*z, y - z) + sign(z)", |x, y, z| {
            (if x > y { x * z } else { y - z }) + z.signum()
        }),
        ("pow(2, x) * 3*pi", |x, _, _| {
            2f64.powf(x) * 3.0 * std::f64::consts::PI
        }),
        ("(x < y) + 2*(y >= z || x == x) - !(z != 0)", |x, y, z| {
            (x < y) as u8 as f64 + 2.0 * ((y >= z || x == x) as u8 as f64)
                - ((z == 0.0) as u8 as f64)
        }),
    ];
    let mut rng = Lcg(17);
    for &(src, f) in cases {
        let e = parse(src);
        for _ in 0..50 {
            let v = [rng.next(-2.0, 2.0), rng.next(-2.0, 2.0), rng.next(0.1, 3.0)];
            let want = f(v[0], v[1], v[2]);
            let got = e.eval(&v);
            assert!(
                (got - want).abs() <= 1e-14 * want.abs(),
                "{src} at {v:?}: {got} vs {want}"
            );
            let v32 = v.map(|x| x as f32);
            let got32 = e.eval(&v32) as f64;
            let want = f(v32[0] as f64, v32[1] as f64, v32[2] as f64);
            assert!(
                (got32 - want).abs() <= 1e-5 * want.abs().max(1.0),
                "{src} f32 at {v:?}: {got32} vs {want}"
            );
        }
    }
}

#[test]
fn derivatives_match_finite_differences() {
    let cases = [
        "3*x^4 - 2*x^3*y + x - 7",
        "exp(x*y)",
        "sqrt(x^2 + y^2)",
        "atan2(y, x)",
        "x^y",
        "pow(y, sin(x))",
        "abs(x - 3) + abs(y)",
        "if(x > 10, x^2, sin(x)*y)",
        "min(x, 1.2) * max(y, 1.1)",
        "log(x) / (1 + y^2) - x/y",
        "log10(x*y) + 2^x + x^-2",
        "tan(x/3) + asin(x/3) + acos(y/3)",
        "atan(x*y) + sinh(x) - cosh(y) * tanh(x)",
        "cos(x)^3 * exp(-y) / (x + y)",
        "floor(y) * x + sign(y) * x^2 + (x < y)",
    ];
    let mut rng = Lcg(3);
    for src in cases {
        let e = parse(src);
        for slot in 0..2 {
            let d = e.derivative(slot);
            // The rendering parses back to the same derivative.
            assert_eq!(
                Expr::parse(d.source(), &xyz())
                    .unwrap()
                    .to_cuda(&["x", "y", "z"]),
                d.to_cuda(&["x", "y", "z"])
            );
            for _ in 0..10 {
                // Away from the kinks at 1.1, 1.2 and the integers.
                let mut v = [rng.next(0.5, 2.0), rng.next(0.5, 2.0), 0.0];
                v[0] += if (v[0] - 1.2).abs() < 0.01 { 0.1 } else { 0.0 };
                v[1] += if (v[1] - 1.1).abs() < 0.01 || (v[1] - 1.0).abs() < 0.01 {
                    0.05
                } else {
                    0.0
                };
                let h = 1e-5;
                let (mut up, mut down) = (v, v);
                up[slot] += h;
                down[slot] -= h;
                let fd = (e.eval(&up) - e.eval(&down)) / (2.0 * h);
                let got = d.eval(&v);
                assert!(
                    (got - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                    "d/d{slot} {src} = {} at {v:?}: {got} vs {fd}",
                    d.source()
                );
            }
        }
    }
    assert_eq!(parse("x*y + z").derivative(2).constant_value(), Some(1.0));
    assert_eq!(parse("y^2").derivative(0).constant_value(), Some(0.0));
}

const CUDA_MATH: &[&str] = &[
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "log",
    "log10", "sqrt", "floor", "ceil", "pow", "fabs", "fmin", "fmax",
];

#[test]
fn cuda_emission() {
    let names = ["x[0]", "x[1]", "x[2]"];
    let cases = [
        ("1.5", "((real)1.5e0)"),
        ("x + 2*y", "(x[0] + (((real)2e0) * x[1]))"),
        ("-x^2 + y^3", "((-(x[0] * x[0])) + (x[1] * x[1] * x[1]))"),
        ("sin(x)^2 * z^2.5", "(pow(sin(x[0]), ((real)2e0)) * pow(x[2], ((real)2.5e0)))"),
        ("abs(x) + min(y, z) - max(x, 1)", "((fabs(x[0]) + fmin(x[1], x[2])) - fmax(x[0], ((real)1e0)))"),
        (
            "x < y && !z",
            "((((x[0] < x[1]) ? (real)1 : (real)0) != (real)0 && ((x[2] == (real)0) ? (real)1 : (real)0) != (real)0) ? (real)1 : (real)0)",
        ),
        (
            "if(x >= 0, sign(y), 0.1)",
            "((((x[0] >= ((real)0e0)) ? (real)1 : (real)0) != (real)0) ? ((x[1] > (real)0) ? (real)1 : ((x[1] < (real)0) ? (real)-1 : (real)0)) : ((real)1e-1))",
        ),
        ("2*pi*x/1e-3", "((((real)6.283185307179586e0) * x[0]) / ((real)1e-3))"),
        ("atan2(y, x) - log10(z)", "(atan2(x[1], x[0]) - log10(x[2]))"),
    ];
    for (src, want) in cases {
        assert_eq!(parse(src).to_cuda(&names), want, "{src}");
    }
    assert_eq!(
        parse("x*y").to_cuda(&["p.x", "u + 1", "z"]),
        "(p.x * (u + 1))"
    );
    // Every function of the language and of their derivatives maps to CUDA math.
    let all = "sin(x) + cos(y) + tan(z) + asin(x) + acos(y) + atan(z) + atan2(x, y) + sinh(x) + cosh(y) \
               + tanh(z) + exp(x) + log(y) + log10(z) + sqrt(x) + abs(y) + min(x, y) + max(y, z) + pow(x, y) \
               + floor(x) + ceil(y) + sign(z) + if(x, y, z) + x^y";
    let e = parse(all);
    for code in [
        e.to_cuda(&names),
        e.derivative(0).to_cuda(&names),
        e.derivative(1).to_cuda(&names),
    ] {
        let bytes = code.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &code[start..i];
            if i == start {
                i += 1;
            } else if bytes.get(i) == Some(&b'(') {
                assert!(CUDA_MATH.contains(&word), "`{word}(` in {code}");
            } else if word == "real" {
                assert!(start > 0 && &code[start - 1..i + 1] == "(real)", "{code}");
            }
        }
    }
}

#[test]
fn expr_is_send_sync_clone() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Expr>();
    check::<ExprError>();
    let e = parse("x + 1");
    std::thread::spawn(move || assert_eq!(e.eval(&[1.0f64, 0.0, 0.0]), 2.0))
        .join()
        .unwrap();
}

#[test]
fn deep_but_legal_nesting_fits_a_small_stack() {
    // Expressions at the depth limits: parsed, differentiated, emitted and evaluated
    // within half of a test thread's default stack.
    let work = || {
        let mut horner = String::from("1");
        for k in 0..127 {
            horner = format!("{k} + x*({horner})");
        }
        let cases = [
            format!("{}x{}", "sin(".repeat(255), ")".repeat(255)),
            format!("{}x{}", "(".repeat(510), ")".repeat(510)),
            format!("x{}", " * x".repeat(255)),
            horner,
        ];
        for src in &cases {
            let e = parse(src);
            let d = e.derivative(0);
            assert!(d.to_cuda(&["x", "y", "z"]).len() >= e.to_cuda(&["x", "y", "z"]).len());
            assert!(d.eval(&[0.25f64, 0.0, 0.0]).is_finite(), "{}", d.source());
        }
        assert_eq!(parse(&cases[3]).eval(&[0.0, 0.0, 0.0]), 126.0);
    };
    let thread = std::thread::Builder::new().stack_size(1024 * 1024);
    thread.spawn(work).unwrap().join().unwrap();
}
