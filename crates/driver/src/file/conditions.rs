//! Materials, boundary conditions and probes of a problem file, interpreted once the
//! mesh's dimension is known (it decides the variables `x, y[, z]` and the number of
//! components).

use super::schema::{BoundarySection, MaterialSection, ProbeSection, Raw};
use super::values::{symbols, type_name};
use super::ProblemFile;
use crate::pipeline_error::PipelineError;
use ferrofem_physics::{Coef, Material, ModelKind, Moduli};
use std::ops::Range;
use toml::Value;

/// A region (or boundary group) as named in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegionRef {
    /// Every cell (materials only).
    All,
    /// A physical group's name.
    Name(String),
    /// A physical group's numeric tag.
    Tag(i32),
}

impl std::fmt::Display for RegionRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegionRef::All => write!(f, "all"),
            RegionRef::Name(n) => write!(f, "{}", n.escape_debug()),
            RegionRef::Tag(t) => write!(f, "{t}"),
        }
    }
}

/// A `[[material]]` entry.
#[derive(Clone, Debug)]
pub struct MaterialSpec {
    /// Which cells.
    pub region: RegionRef,
    /// Where the entry's `region` is written.
    pub span: Range<usize>,
    /// The coefficients.
    pub material: Material,
    /// The region's source (from `[problem] source`, with its constant parameters bound).
    pub source: Vec<Coef>,
}

/// A boundary condition.
#[derive(Clone, Debug)]
pub enum BoundaryCondition {
    /// Values per component; `None` leaves that component free.
    Dirichlet(Vec<Option<Coef>>),
    /// Flux `κ∂u/∂n` or traction `σn`, per component, of `x, y[, z], nx, ny[, nz]`.
    Neumann(Vec<Coef>),
    /// `κ∂u/∂n = h (u_inf − u)`: the transfer coefficient `h ≥ 0` and the ambient value.
    Robin(Box<[Coef; 2]>),
}

/// A `[[boundary]]` entry.
#[derive(Clone, Debug)]
pub struct BoundarySpec {
    /// Which boundary group.
    pub region: RegionRef,
    /// Where the entry's `region` is written.
    pub span: Range<usize>,
    /// The condition.
    pub condition: BoundaryCondition,
}

impl BoundarySpec {
    /// A condition on the boundary group named `group` (a physical name, or a tag as
    /// digits), for problems set up from code.
    pub fn new(group: &str, condition: BoundaryCondition) -> BoundarySpec {
        BoundarySpec {
            region: match group.parse::<i32>() {
                Ok(tag) => RegionRef::Tag(tag),
                Err(_) => RegionRef::Name(group.to_string()),
            },
            span: 0..0,
            condition,
        }
    }
}

/// A `[[probe]]` entry: named points.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeSpec {
    /// The probe's name (`probe<i>` when not given).
    pub name: String,
    /// Its points.
    pub points: Vec<[f64; 3]>,
}

const COMPONENTS: [&str; 3] = ["x", "y", "z"];

impl ProblemFile {
    /// The region named by `raw`: a name, a tag, or `all` where `all_allowed`.
    pub(crate) fn region_ref(
        &self,
        raw: &Raw,
        all_allowed: bool,
    ) -> Result<RegionRef, PipelineError> {
        match raw.get_ref() {
            Value::String(s) if s == "all" && all_allowed => Ok(RegionRef::All),
            Value::String(s) if s == "all" => Err(self.error(
                &raw.span(),
                "region = \"all\" is for materials; name the boundary group",
            )),
            Value::String(s) if !s.is_empty() => Ok(RegionRef::Name(s.clone())),
            Value::Integer(t) => i32::try_from(*t)
                .map(RegionRef::Tag)
                .map_err(|_| self.error(&raw.span(), format!("region tag {t} is out of range"))),
            v => Err(self.error(
                &raw.span(),
                format!(
                    "region: expected a physical group's name or tag, found {}",
                    type_name(v)
                ),
            )),
        }
    }

    /// The constant parameters a material defines (for the source's symbols).
    fn material_constants(&self, m: &MaterialSection) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        let entries = [
            ("kappa", &m.kappa),
            ("reaction", &m.reaction),
            ("E", &m.young),
            ("nu", &m.nu),
            ("lambda", &m.lambda),
            ("mu", &m.mu),
            ("rho", &m.rho),
        ];
        for (name, raw) in entries {
            if let Some(raw) = raw {
                match raw.get_ref() {
                    Value::Integer(i) => out.push((name.to_string(), *i as f64)),
                    Value::Float(f) => out.push((name.to_string(), *f)),
                    _ => {}
                }
            }
        }
        out
    }

    /// The `[[material]]` entries for `kind` in dimension `dim`, each with its source.
    pub(crate) fn materials(
        &self,
        kind: ModelKind,
        dim: usize,
        constants: &[(String, f64)],
    ) -> Result<Vec<MaterialSpec>, PipelineError> {
        let spec = &self.spec;
        if spec.material.is_empty() {
            return Err(self.error_at(
                0,
                "no [[material]]: give at least one, e.g. [[material]] region = \"all\" with \
                 the coefficients of the problem",
            ));
        }
        let coef_symbols =
            symbols(dim, &[], constants).map_err(|e| self.error_at(0, e.to_string()))?;
        let kappa_symbols = match kind {
            ModelKind::NonlinearDiffusion => symbols(dim, &["u"], constants),
            _ => symbols(dim, &[], constants),
        }
        .map_err(|e| self.error_at(0, e.to_string()))?;
        let ncomp = match kind {
            ModelKind::Elasticity { .. } => dim,
            _ => 1,
        };
        let mut out = Vec::new();
        for entry in &spec.material {
            let m = entry.get_ref();
            let span = m.region.span();
            let region = self.region_ref(&m.region, true)?;
            let here = |what: &str| format!("material `{region}`: {what}");
            let refuse = |raw: &Option<Raw>, key: &str, why: &str| match raw {
                Some(r) => Err(self.error(&r.span(), here(&format!("`{key}` {why}")))),
                None => Ok(()),
            };
            let material = match kind {
                ModelKind::Elasticity { .. } => {
                    refuse(
                        &m.kappa,
                        "kappa",
                        "is not a parameter of elasticity (E, nu or lambda, mu)",
                    )?;
                    refuse(&m.reaction, "reaction", "is not a parameter of elasticity")?;
                    let moduli = match (&m.young, &m.nu, &m.lambda, &m.mu) {
                        (Some(e), Some(nu), None, None) => Moduli::Young {
                            young: self.coef(e, &coef_symbols, &here("E"))?,
                            poisson: self.coef(nu, &coef_symbols, &here("nu"))?,
                        },
                        (None, None, Some(l), Some(mu)) => Moduli::Lame {
                            lambda: self.coef(l, &coef_symbols, &here("lambda"))?,
                            mu: self.coef(mu, &coef_symbols, &here("mu"))?,
                        },
                        _ => {
                            return Err(
                                self.error(&span, here("give either E and nu, or lambda and mu"))
                            )
                        }
                    };
                    Material::Elasticity(moduli)
                }
                _ => {
                    for (raw, key) in [
                        (&m.young, "E"),
                        (&m.nu, "nu"),
                        (&m.lambda, "lambda"),
                        (&m.mu, "mu"),
                    ] {
                        refuse(raw, key, &format!("is not a parameter of {}", kind.name()))?;
                    }
                    let kappa = match &m.kappa {
                        Some(k) => self.coef(k, &kappa_symbols, &here("kappa"))?,
                        None => {
                            return Err(self.error(&span, here("needs kappa (the conductivity)")))
                        }
                    };
                    let reaction = match (&m.reaction, kind) {
                        (Some(r), ModelKind::Diffusion) => {
                            self.coef(r, &coef_symbols, &here("reaction"))?
                        }
                        (Some(r), _) => {
                            return Err(self.error(
                                &r.span(),
                                here("`reaction` is not a parameter of nonlinear diffusion"),
                            ))
                        }
                        (None, _) => Coef::Const(0.0),
                    };
                    Material::Diffusion { kappa, reaction }
                }
            };
            if let Some(rho) = &m.rho {
                // density: a constant the source may use
                if !matches!(rho.get_ref(), Value::Integer(_) | Value::Float(_)) {
                    return Err(self.error(&rho.span(), here("rho must be a number")));
                }
            }
            let mut local: Vec<(String, f64)> = constants.to_vec();
            local.extend(self.material_constants(m));
            let source = match &spec.problem.source {
                Some(raw) => {
                    let s = symbols(dim, &[], &local).map_err(|e| {
                        self.error(&span, here(&format!("its parameters as constants: {e}")))
                    })?;
                    self.coefs(raw, ncomp, &s, "source")?
                }
                None => Vec::new(),
            };
            out.push(MaterialSpec {
                region,
                span,
                material,
                source,
            });
        }
        Ok(out)
    }

    /// The `[[boundary]]` entries for `ncomp` components in dimension `dim`.
    pub(crate) fn boundaries(
        &self,
        ncomp: usize,
        dim: usize,
        constants: &[(String, f64)],
    ) -> Result<Vec<BoundarySpec>, PipelineError> {
        let point = symbols(dim, &[], constants).map_err(|e| self.error_at(0, e.to_string()))?;
        let normals = ["nx", "ny", "nz"];
        let with_normal = symbols(dim, &normals[..dim], constants)
            .map_err(|e| self.error_at(0, e.to_string()))?;
        let mut out = Vec::new();
        for entry in &self.spec.boundary {
            let b: &BoundarySection = entry.get_ref();
            let span = b.region.span();
            let region = self.region_ref(&b.region, false)?;
            let here = |what: &str| format!("boundary `{region}`: {what}");
            let condition = match (&b.dirichlet, &b.neumann, &b.robin) {
                (Some(raw), None, None) => BoundaryCondition::Dirichlet(self.dirichlet(
                    raw,
                    ncomp,
                    &point,
                    &here("dirichlet"),
                )?),
                (None, Some(raw), None) => BoundaryCondition::Neumann(self.coefs(
                    raw,
                    ncomp,
                    &with_normal,
                    &here("neumann"),
                )?),
                (None, None, Some(raw)) if ncomp != 1 => {
                    return Err(self.error(
                        &raw.span(),
                        here("robin conditions are for the scalar problems"),
                    ))
                }
                (None, None, Some(raw)) => self.robin(raw, &point, &here("robin"))?,
                _ => {
                    return Err(self.error(
                        &span,
                        here("give exactly one of dirichlet, neumann or robin"),
                    ))
                }
            };
            out.push(BoundarySpec {
                region,
                span,
                condition,
            });
        }
        Ok(out)
    }

    /// `dirichlet = v`, `[v1, v2, ...]` or `{ x = v, ... }` (components not named are free).
    fn dirichlet(
        &self,
        raw: &Raw,
        ncomp: usize,
        symbols: &ferrofem_expr::Symbols,
        what: &str,
    ) -> Result<Vec<Option<Coef>>, PipelineError> {
        if let Value::Table(t) = raw.get_ref() {
            if ncomp == 1 {
                return Err(self.error(
                    &raw.span(),
                    format!("{what}: a scalar problem takes one value, not a table"),
                ));
            }
            let mut comps = vec![None; ncomp];
            for (key, v) in t {
                let Some(c) = COMPONENTS[..ncomp].iter().position(|n| n == key) else {
                    return Err(self.error(
                        &raw.span(),
                        format!(
                            "{what}: unknown component `{}` (components: {})",
                            key.escape_debug(),
                            COMPONENTS[..ncomp].join(", ")
                        ),
                    ));
                };
                comps[c] = Some(self.coef_at(v, &raw.span(), symbols, what)?);
            }
            if comps.iter().all(Option::is_none) {
                return Err(self.error(&raw.span(), format!("{what}: no component given")));
            }
            return Ok(comps);
        }
        Ok(self
            .coefs(raw, ncomp, symbols, what)?
            .into_iter()
            .map(Some)
            .collect())
    }

    /// `robin = { h = .., u_inf = .. }`.
    fn robin(
        &self,
        raw: &Raw,
        symbols: &ferrofem_expr::Symbols,
        what: &str,
    ) -> Result<BoundaryCondition, PipelineError> {
        let Value::Table(t) = raw.get_ref() else {
            return Err(self.error(
                &raw.span(),
                format!("{what}: expected {{ h = .., u_inf = .. }}"),
            ));
        };
        if let Some(k) = t.keys().find(|k| *k != "h" && *k != "u_inf") {
            return Err(self.error(
                &raw.span(),
                format!(
                    "{what}: unknown key `{}` (expected h, u_inf)",
                    k.escape_debug()
                ),
            ));
        }
        let get = |key: &str| match t.get(key) {
            Some(v) => self.coef_at(v, &raw.span(), symbols, &format!("{what} {key}")),
            None => Err(self.error(&raw.span(), format!("{what}: missing `{key}`"))),
        };
        Ok(BoundaryCondition::Robin(Box::new([
            get("h")?,
            get("u_inf")?,
        ])))
    }

    /// The `[[probe]]` entries in dimension `dim` (checked: `dim` finite coordinates each,
    /// lines of at least two points).
    pub fn probes(&self, dim: usize) -> Result<Vec<ProbeSpec>, PipelineError> {
        let mut out = Vec::new();
        for (i, entry) in self.spec.probe.iter().enumerate() {
            let p: &ProbeSection = entry.get_ref();
            let span = entry.span();
            let point = |v: &[f64], what: &str| -> Result<[f64; 3], PipelineError> {
                if v.len() != dim || v.iter().any(|x| !x.is_finite()) {
                    return Err(self.error(
                        &span,
                        format!(
                            "probe: `{what}` needs {dim} finite coordinates, found {}",
                            v.len()
                        ),
                    ));
                }
                let mut x = [0.0; 3];
                x[..dim].copy_from_slice(v);
                Ok(x)
            };
            let points = match (&p.at, &p.line) {
                (Some(at), None) => vec![point(at, "at")?],
                (None, Some(line)) => {
                    let (a, b) = (point(&line.from, "from")?, point(&line.to, "to")?);
                    if line.count < 2 {
                        return Err(self.error(&span, "probe line: count must be at least 2"));
                    }
                    (0..line.count)
                        .map(|k| {
                            let t = k as f64 / (line.count - 1) as f64;
                            [0, 1, 2].map(|c| a[c] + t * (b[c] - a[c]))
                        })
                        .collect()
                }
                _ => {
                    return Err(self.error(&span, "probe: give either `at` or `line`"));
                }
            };
            out.push(ProbeSpec {
                name: p.name.clone().unwrap_or_else(|| format!("probe{i}")),
                points,
            });
        }
        Ok(out)
    }
}
