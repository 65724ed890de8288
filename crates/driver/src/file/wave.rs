//! Wave problems in a problem file (`kind = "acoustic"` or `"elastic"`): materials with
//! `rho`, `vp` (and `vs`) or a velocity model file, boundaries `free`, `rigid` or
//! `absorbing`, `[time]`, `[[source]]`, `[[receiver]]` and the wave outputs, checked with
//! their place in the file.
//!
//! ```toml
//! [problem]
//! kind = "acoustic"              # or "elastic"
//!
//! [[material]]                   # per physical group of dimension d, or "all"
//! region = "water"
//! rho = 1000
//! vp = 1500                      # numbers or expressions of x, y, z; elastic: vs too
//!
//! [[material]]
//! region = "rock"
//! model = "rock.xyz"             # instead of rho, vp, vs: a regular-grid velocity model
//!                                # (SPECFEM's ASCII tomography file), relative to this file
//!
//! [[boundary]]
//! region = "bottom"
//! absorbing = "stacey"           # or free = true, rigid = true
//!
//! [time]
//! duration = 2e-4                # or steps = 2000
//! dt = "auto"                    # or a step in seconds, at most the stable one
//!
//! [[source]]
//! at = [0.025, 0.025]
//! wavelet = { kind = "ricker", f0 = 5e5 }   # gaussian, gaussian-derivative; delay = ...
//! amplitude = 1.0                # acoustic; elastic: force = [0, -1] or moment = [...]
//!
//! [[receiver]]
//! line = { from = [0.0, 0.03], to = [0.05, 0.03], count = 26 }   # or at, grid
//!
//! [output]
//! seismograms = "out/seis"       # out/seis_p.csv, .su, ...
//! formats = ["csv", "su", "segy"]
//! snapshots = "out/field.pvd"
//! every = 100
//! plots = true
//! ```

use super::schema::{BoundarySection, LineSection, ReceiverSection, SourceSection};
use super::values::{symbols, type_name};
use super::{ProblemFile, RegionRef};
use crate::backend::BackendArg;
use crate::mesh_input::MeshInput;
use crate::pipeline_error::PipelineError;
use crate::settings::Precision;
use crate::wave::{SeismogramFormat, WaveCase, WaveOutputs};
use ferrofem_mesh::Mesh;
use ferrofem_physics::Coef;
use ferrofem_wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, Receiver, RunLength, Source, SourceKind,
    TimeSpec, VelocityModel, WaveKind, WaveSetup, Wavelet, MAX_ORDER,
};
use std::ops::Range;
use std::sync::Arc;
use toml::Value;

/// The parts of a wave problem file that need no mesh.
#[derive(Clone, Debug)]
pub struct WaveDefinition {
    /// The mesh to load.
    pub mesh: MeshInput,
    /// Polynomial order.
    pub order: usize,
    /// Acoustic or elastic.
    pub kind: WaveKind,
    /// The file's named constants.
    pub constants: Vec<(String, f64)>,
    /// Field precision.
    pub precision: Precision,
    /// Where to run.
    pub backend: BackendArg,
    /// Time step and run length.
    pub time: TimeSpec,
    /// Output files.
    pub outputs: WaveOutputs,
}

/// One `[[material]]` of a wave problem: its cells and where its values come from.
struct WaveMaterial {
    region: RegionRef,
    span: Range<usize>,
    tag: Option<i32>,
    values: WaveValues,
}

/// The values of a wave material.
enum WaveValues {
    /// Numbers or expressions of the position: `rho`, `vp`, `vs`.
    Coefs(Box<[Coef; 3]>),
    /// A velocity model file, with the place of its `model` key.
    Model {
        model: Arc<VelocityModel>,
        span: Range<usize>,
    },
}

impl WaveValues {
    /// The material at `x` (`dim` coordinates used) for `kind`: acoustic waves take `vp`
    /// and `rho` of a model and not its `vs`.
    fn at(&self, kind: WaveKind, dim: usize, x: &[f64; 3]) -> Result<Material, String> {
        match self {
            WaveValues::Coefs(coefs) => {
                let [rho, vp, vs] = &**coefs;
                let v = &x[..dim];
                Ok(Material {
                    rho: rho.eval(v),
                    vp: vp.eval(v),
                    vs: vs.eval(v),
                })
            }
            WaveValues::Model { model, .. } => {
                let m = model.at(x).map_err(|e| e.to_string())?;
                Ok(match kind {
                    WaveKind::Acoustic => Material::fluid(m.rho, m.vp),
                    WaveKind::Elastic => m,
                })
            }
        }
    }
}

impl ProblemFile {
    /// True when the file describes a wave problem (`kind = "acoustic"` or `"elastic"`).
    pub fn is_wave(&self) -> bool {
        matches!(
            self.spec.problem.kind.get_ref().as_str(),
            "acoustic" | "elastic"
        )
    }

    /// An error when the file has sections or keys of wave problems (it is a solve file).
    pub(crate) fn refuse_wave_keys(&self) -> Result<(), PipelineError> {
        let s = &self.spec;
        let first = [
            s.time.as_ref().map(|t| (t.span(), "[time]")),
            s.source.first().map(|t| (t.span(), "[[source]]")),
            s.receiver.first().map(|t| (t.span(), "[[receiver]]")),
            s.output
                .seismograms
                .as_ref()
                .map(|t| (t.span(), "[output] seismograms")),
            s.output
                .snapshots
                .as_ref()
                .map(|t| (t.span(), "[output] snapshots")),
            s.output
                .formats
                .as_ref()
                .map(|t| (t.span(), "[output] formats")),
            s.output
                .every
                .as_ref()
                .map(|t| (t.span(), "[output] every")),
            s.output
                .plots
                .as_ref()
                .map(|t| (t.span(), "[output] plots")),
        ];
        if let Some((span, what)) = first.into_iter().flatten().next() {
            return Err(self.error(
                &span,
                format!("{what} is for wave problems (kind = \"acoustic\" or \"elastic\")"),
            ));
        }
        for m in &s.material {
            if let Some(raw) = [&m.get_ref().vp, &m.get_ref().vs]
                .into_iter()
                .flatten()
                .next()
            {
                return Err(self.error(&raw.span(), "vp and vs are parameters of wave problems"));
            }
            if let Some(f) = &m.get_ref().model {
                return Err(self.error(
                    &f.span(),
                    "model (a velocity model file) is for wave problems",
                ));
            }
        }
        for b in &s.boundary {
            let b = b.get_ref();
            let spans = [
                b.free.as_ref().map(|v| v.span()),
                b.rigid.as_ref().map(|v| v.span()),
                b.absorbing.as_ref().map(|v| v.span()),
            ];
            if let Some(span) = spans.into_iter().flatten().next() {
                return Err(self.error(&span, "free, rigid and absorbing are wave boundaries"));
            }
        }
        Ok(())
    }

    /// The wave problem's settings that need no mesh.
    pub fn wave_definition(&self) -> Result<WaveDefinition, PipelineError> {
        let s = &self.spec;
        let kind = match s.problem.kind.get_ref().as_str() {
            "acoustic" => WaveKind::Acoustic,
            "elastic" => WaveKind::Elastic,
            other => {
                return Err(self.error(
                    &s.problem.kind.span(),
                    format!(
                        "[problem] kind `{}` is not a wave problem (acoustic or elastic): run it with `ferrofem solve`",
                        other.escape_debug()
                    ),
                ))
            }
        };
        for (raw, key) in [
            (s.problem.source.as_ref().map(|r| r.span()), "source"),
            (s.problem.plane.as_ref().map(|r| r.span()), "plane"),
        ] {
            if let Some(span) = raw {
                return Err(self.error(
                    &span,
                    format!("[problem] {key} is not used by wave problems (sources are [[source]] entries)"),
                ));
            }
        }
        let sv = &s.solver;
        for (span, key) in [
            (sv.kind.as_ref().map(|v| v.span()), "kind"),
            (sv.rtol.as_ref().map(|v| v.span()), "rtol"),
            (sv.max_iter.as_ref().map(|v| v.span()), "max_iter"),
            (sv.operator.as_ref().map(|v| v.span()), "operator"),
            (
                sv.preconditioner.as_ref().map(|v| v.span()),
                "preconditioner",
            ),
        ] {
            if let Some(span) = span {
                return Err(self.error(
                    &span,
                    format!("[solver] {key} is for solves; a wave run takes backend and precision"),
                ));
            }
        }
        if let Some(p) = s.probe.first() {
            return Err(self.error(&p.span(), "[[probe]] is for solves; waves use [[receiver]]"));
        }
        for (span, key) in [
            (s.output.vtu.as_ref().map(|v| v.span()), "vtu"),
            (s.output.probes.as_ref().map(|v| v.span()), "probes"),
        ] {
            if let Some(span) = span {
                return Err(self.error(
                    &span,
                    format!("[output] {key} is for solves; waves write seismograms and snapshots"),
                ));
            }
        }
        let m = &s.mesh;
        let mesh = self.mesh_input()?;
        let order = *m.order.get_ref();
        if order == 0 || order > MAX_ORDER {
            return Err(self.error(
                &m.order.span(),
                format!("[mesh] order: the wave solver takes orders 1 to {MAX_ORDER}"),
            ));
        }
        let constants = self.constants()?;
        let precision = self.precision()?;
        let backend = self.backend()?;
        let time = self.time_spec()?;
        let outputs = self.wave_outputs()?;
        Ok(WaveDefinition {
            mesh,
            order,
            kind,
            constants,
            precision,
            backend,
            time,
            outputs,
        })
    }

    fn time_spec(&self) -> Result<TimeSpec, PipelineError> {
        let Some(t) = &self.spec.time else {
            return Err(self.error_at(0, "a wave problem needs [time] with `duration` or `steps`"));
        };
        let tt = t.get_ref();
        let length = match (&tt.duration, &tt.steps) {
            (Some(d), None) if d.get_ref().is_finite() && *d.get_ref() > 0.0 => {
                RunLength::Duration(*d.get_ref())
            }
            (Some(d), None) => {
                return Err(self.error(&d.span(), "[time] duration: must be positive"))
            }
            (None, Some(n)) if *n.get_ref() >= 1 => RunLength::Steps(*n.get_ref() as usize),
            (None, Some(n)) => return Err(self.error(&n.span(), "[time] steps: at least 1")),
            (Some(d), Some(_)) => {
                return Err(self.error(&d.span(), "[time]: give `duration` or `steps`, not both"))
            }
            (None, None) => return Err(self.error(&t.span(), "[time]: give `duration` or `steps`")),
        };
        let dt = match &tt.dt {
            None => None,
            Some(raw) => match raw.get_ref() {
                Value::String(s) if s == "auto" => None,
                Value::Float(v) if v.is_finite() && *v > 0.0 => Some(*v),
                Value::Integer(v) if *v > 0 => Some(*v as f64),
                v => {
                    return Err(self.error(
                        &raw.span(),
                        format!(
                            "[time] dt: expected \"auto\" or a positive step in seconds, found {}",
                            type_name(v)
                        ),
                    ))
                }
            },
        };
        Ok(TimeSpec { dt, length })
    }

    fn wave_outputs(&self) -> Result<WaveOutputs, PipelineError> {
        let o = &self.spec.output;
        let formats = match &o.formats {
            None => vec![SeismogramFormat::Csv, SeismogramFormat::Su],
            Some(f) => f
                .get_ref()
                .iter()
                .map(|name| {
                    SeismogramFormat::parse(name).ok_or_else(|| {
                        self.error(
                            &f.span(),
                            format!(
                                "[output] formats: unknown `{}` (expected csv, su or segy)",
                                name.escape_debug()
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let every = match &o.every {
            None => None,
            Some(e) if *e.get_ref() >= 1 => Some(*e.get_ref()),
            Some(e) => return Err(self.error(&e.span(), "[output] every: at least 1 step")),
        };
        if let (Some(e), None) = (&o.every, &o.snapshots) {
            return Err(self.error(&e.span(), "[output] every: no `snapshots` file is given"));
        }
        Ok(WaveOutputs {
            seismograms: o
                .seismograms
                .as_ref()
                .map(|p| self.resolve_path(p.get_ref())),
            formats,
            snapshots: o.snapshots.as_ref().map(|p| self.resolve_path(p.get_ref())),
            every,
            plots: o.plots.as_ref().is_some_and(|p| *p.get_ref()),
        })
    }

    /// Loads the mesh and sets the wave problem up on it.
    pub fn wave_case(&self) -> Result<WaveCase, PipelineError> {
        let def = self.wave_definition()?;
        let mesh = def.mesh.load()?;
        let setup = self.wave_setup_on(&mesh.mesh, &def)?;
        Ok(WaveCase {
            mesh,
            setup,
            precision: def.precision,
            backend: def.backend,
            outputs: def.outputs,
        })
    }

    /// The wave setup of this file on `mesh`: materials, boundaries, sources, receivers.
    pub fn wave_setup_on(
        &self,
        mesh: &Mesh,
        def: &WaveDefinition,
    ) -> Result<WaveSetup, PipelineError> {
        let dim = mesh.dim();
        if !mesh.cell_type().is_tensor() {
            return Err(self.error_at(
                0,
                format!(
                    "the wave solver needs quadrilaterals or hexahedra; the mesh has {} cells",
                    mesh.cell_type()
                ),
            ));
        }
        let medium = self.wave_medium(mesh, def)?;
        let boundaries = self.wave_boundaries(mesh, def.kind)?;
        let sources = self
            .spec
            .source
            .iter()
            .enumerate()
            .map(|(i, s)| self.wave_source(i, s.get_ref(), &s.span(), dim, def.kind))
            .collect::<Result<Vec<_>, _>>()?;
        let mut receivers = Vec::new();
        for (i, r) in self.spec.receiver.iter().enumerate() {
            receivers.extend(self.wave_receivers(i, r.get_ref(), &r.span(), dim)?);
        }
        let mut names: Vec<&str> = receivers.iter().map(|r| r.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(self.error_at(0, format!("two receivers are named `{}`", w[0])));
        }
        Ok(WaveSetup {
            kind: def.kind,
            order: def.order,
            medium,
            boundaries,
            sources,
            receivers,
            time: def.time,
            check_every: 0,
            body_force: None,
        })
    }

    fn wave_medium(&self, mesh: &Mesh, def: &WaveDefinition) -> Result<Medium, PipelineError> {
        let spec = &self.spec;
        let dim = mesh.dim();
        if spec.material.is_empty() {
            return Err(self.error_at(
                0,
                "no [[material]]: give at least one, e.g. region = \"all\" with rho and vp",
            ));
        }
        let syms =
            symbols(dim, &[], &def.constants).map_err(|e| self.error_at(0, e.to_string()))?;
        let mut materials = Vec::new();
        for entry in &spec.material {
            let m = entry.get_ref();
            let span = m.region.span();
            let region = self.region_ref(&m.region, true)?;
            let here = |what: &str| format!("material `{region}`: {what}");
            for (raw, key) in [
                (&m.kappa, "kappa"),
                (&m.reaction, "reaction"),
                (&m.young, "E"),
                (&m.nu, "nu"),
                (&m.lambda, "lambda"),
                (&m.mu, "mu"),
            ] {
                if let Some(r) = raw {
                    return Err(self.error(
                        &r.span(),
                        here(&format!("`{key}` is not a wave parameter (rho, vp, vs)")),
                    ));
                }
            }
            let tag = match &region {
                RegionRef::All => None,
                RegionRef::Tag(t) => Some(*t),
                RegionRef::Name(n) => Some(
                    mesh.tag_of(dim, n)
                        .ok_or_else(|| self.error(&span, self.unknown_region(mesh, dim, n)))?,
                ),
            };
            let values = match &m.model {
                Some(file) => {
                    for (raw, key) in [(&m.rho, "rho"), (&m.vp, "vp"), (&m.vs, "vs")] {
                        if let Some(r) = raw {
                            return Err(self.error(
                                &r.span(),
                                here(&format!(
                                    "`{key}` cannot be given with `model` (the model file gives \
                                     rho, vp and vs)"
                                )),
                            ));
                        }
                    }
                    let fspan = file.span();
                    let model = VelocityModel::read(self.resolve_path(file.get_ref()))
                        .map_err(|e| self.error(&fspan, here(&format!("model: {e}"))))?;
                    if model.dim() != dim {
                        return Err(self.error(
                            &fspan,
                            here(&format!(
                                "model: {} is a {}-D velocity model; the mesh is {dim}-D",
                                model.path().display(),
                                model.dim()
                            )),
                        ));
                    }
                    WaveValues::Model {
                        model: Arc::new(model),
                        span: fspan,
                    }
                }
                None => {
                    let need = |raw: &Option<super::schema::Raw>, key: &str| match raw {
                        Some(r) => self.coef(r, &syms, &here(key)),
                        None => Err(self.error(
                            &span,
                            here(&format!("needs `{key}` (or a velocity `model` file)")),
                        )),
                    };
                    let rho = need(&m.rho, "rho")?;
                    let vp = need(&m.vp, "vp")?;
                    let vs = match (def.kind, &m.vs) {
                        (WaveKind::Elastic, _) => need(&m.vs, "vs")?,
                        (WaveKind::Acoustic, Some(r)) => {
                            return Err(self.error(&r.span(), here("`vs` is for elastic waves")))
                        }
                        (WaveKind::Acoustic, None) => Coef::Const(0.0),
                    };
                    // constant materials are checked here, with their place in the file
                    if let (Some(r), Some(p), Some(s)) =
                        (rho.constant(), vp.constant(), vs.constant())
                    {
                        let mat = Material {
                            rho: r,
                            vp: p,
                            vs: s,
                        };
                        if let Some(why) = mat.check(def.kind) {
                            return Err(self.error(&span, here(&why)));
                        }
                    }
                    WaveValues::Coefs(Box::new([rho, vp, vs]))
                }
            };
            materials.push(WaveMaterial {
                region,
                span,
                tag,
                values,
            });
        }
        // every cell has a material: named regions first, then `all`
        let has_all = materials.iter().any(|m| m.tag.is_none());
        if !has_all {
            let mut tags: Vec<i32> = mesh.cell_tags().to_vec();
            tags.sort_unstable();
            tags.dedup();
            if let Some(t) = tags
                .iter()
                .find(|t| !materials.iter().any(|m| m.tag == Some(**t)))
            {
                let name = mesh
                    .physical_names()
                    .iter()
                    .find(|n| n.dim == dim && n.tag == *t)
                    .map(|n| format!("`{}` (tag {t})", n.name))
                    .unwrap_or_else(|| format!("tag {t}"));
                return Err(self.error_at(
                    0,
                    format!("cells of region {name} have no [[material]] (add one, or region = \"all\")"),
                ));
            }
        }
        for (i, a) in materials.iter().enumerate() {
            if let Some(b) = materials[..i].iter().find(|b| b.tag == a.tag) {
                return Err(self.error(
                    &a.span,
                    format!(
                        "region `{}` already has a material (`{}`)",
                        a.region, b.region
                    ),
                ));
            }
        }
        // a velocity model covers its cells' vertices, checked here with the place of its
        // key; the solver checks every GLL point (those of curved cells included)
        let of_cell = |materials: &[WaveMaterial], tag: i32| -> Option<usize> {
            materials
                .iter()
                .position(|m| m.tag == Some(tag))
                .or_else(|| materials.iter().position(|m| m.tag.is_none()))
        };
        if materials
            .iter()
            .any(|m| matches!(m.values, WaveValues::Model { .. }))
        {
            let tags = mesh.cell_tags();
            for e in 0..mesh.num_cells() {
                let tag = tags.get(e).copied().unwrap_or(0);
                let Some(i) = of_cell(&materials, tag) else {
                    continue;
                };
                let WaveValues::Model { model, span } = &materials[i].values else {
                    continue;
                };
                for &v in mesh.cell(e) {
                    let c = mesh.vertex(v as usize);
                    let x: [f64; 3] = std::array::from_fn(|a| c.get(a).copied().unwrap_or(0.0));
                    if let Err(err) = model.at(&x) {
                        return Err(self.error(
                            span,
                            format!(
                                "material `{}`: model: {err} (a vertex of element {e})",
                                materials[i].region
                            ),
                        ));
                    }
                }
            }
        }
        let materials = Arc::new(materials);
        let kind = def.kind;
        Ok(Medium::Fallible(Arc::new(move |tag, x| {
            match of_cell(&materials, tag) {
                Some(i) => materials[i].values.at(kind, dim, x).map(Some),
                None => Ok(None),
            }
        })))
    }

    fn unknown_region(&self, mesh: &Mesh, dim: usize, name: &str) -> String {
        let names: Vec<String> = mesh
            .physical_names()
            .iter()
            .filter(|n| n.dim == dim)
            .map(|n| format!("`{}`", n.name))
            .collect();
        format!(
            "the mesh has no region `{}` of dimension {dim} (it has {})",
            name.escape_debug(),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )
    }

    fn wave_boundaries(
        &self,
        mesh: &Mesh,
        kind: WaveKind,
    ) -> Result<Vec<BoundarySpec>, PipelineError> {
        let fd = mesh.dim() - 1;
        let mut out = Vec::new();
        for entry in &self.spec.boundary {
            let b: &BoundarySection = entry.get_ref();
            let span = b.region.span();
            let region = self.region_ref(&b.region, false)?;
            let here = |what: &str| format!("boundary `{region}`: {what}");
            for (raw, key) in [
                (&b.dirichlet, "dirichlet"),
                (&b.neumann, "neumann"),
                (&b.robin, "robin"),
            ] {
                if let Some(r) = raw {
                    return Err(self.error(
                        &r.span(),
                        here(&format!(
                            "`{key}` is for solves; waves take free, rigid or absorbing"
                        )),
                    ));
                }
            }
            let condition = match (&b.free, &b.rigid, &b.absorbing) {
                (Some(f), None, None) if *f.get_ref() => BoundaryCondition::Free,
                (None, Some(r), None) if *r.get_ref() => BoundaryCondition::Rigid,
                (None, None, Some(a)) if a.get_ref() == "stacey" => BoundaryCondition::Absorbing,
                (None, None, Some(a)) => {
                    return Err(self.error(
                        &a.span(),
                        here(&format!(
                            "absorbing: unknown `{}` (expected \"stacey\")",
                            a.get_ref().escape_debug()
                        )),
                    ))
                }
                (Some(v), None, None) | (None, Some(v), None) => {
                    return Err(self.error(&v.span(), here("write the condition as `= true`")))
                }
                _ => {
                    return Err(self.error(
                        &span,
                        here("give one of free = true, rigid = true or absorbing = \"stacey\""),
                    ))
                }
            };
            let name = match &region {
                RegionRef::Name(n) => {
                    if mesh.tag_of(fd, n).is_none() {
                        return Err(self.error(&span, self.unknown_region(mesh, fd, n)));
                    }
                    n.clone()
                }
                RegionRef::Tag(t) => {
                    if !mesh.facets().tags.contains(t) {
                        return Err(self.error(&span, here("the mesh has no facets with this tag")));
                    }
                    t.to_string()
                }
                RegionRef::All => "all".into(),
            };
            let _ = kind;
            out.push(BoundarySpec::new(name, condition));
        }
        Ok(out)
    }

    fn point(
        &self,
        v: &[f64],
        span: &Range<usize>,
        dim: usize,
        what: &str,
    ) -> Result<[f64; 3], PipelineError> {
        if v.len() != dim || v.iter().any(|x| !x.is_finite()) {
            return Err(self.error(span, format!("{what}: expected {dim} finite coordinates")));
        }
        Ok(std::array::from_fn(|a| v.get(a).copied().unwrap_or(0.0)))
    }

    fn wave_source(
        &self,
        i: usize,
        s: &SourceSection,
        span: &Range<usize>,
        dim: usize,
        kind: WaveKind,
    ) -> Result<Source, PipelineError> {
        let name = s.name.clone().unwrap_or_else(|| format!("source{i}"));
        let here = |what: &str| format!("source `{name}`: {what}");
        let position = self.point(s.at.get_ref(), &s.at.span(), dim, &here("at"))?;
        let w = s.wavelet.get_ref();
        let wspan = s.wavelet.span();
        let f0 = || {
            w.f0.as_ref()
                .map(|f| *f.get_ref())
                .ok_or_else(|| self.error(&wspan, here("the wavelet needs f0 (Hz)")))
        };
        let delay = w.delay.as_ref().map(|d| *d.get_ref());
        let wavelet = match w.kind.get_ref().as_str() {
            "ricker" => Wavelet::ricker(f0()?, delay),
            "gaussian" => Wavelet::gaussian(f0()?, delay),
            "gaussian-derivative" => Wavelet::gaussian_derivative(f0()?, delay),
            "file" => {
                let Some(f) = &w.file else {
                    return Err(self.error(&wspan, here("a wavelet of kind \"file\" needs `file`")));
                };
                Wavelet::from_csv(self.resolve_path(f.get_ref()))
            }
            other => {
                return Err(self.error(
                    &w.kind.span(),
                    here(&format!(
                    "unknown wavelet `{}` (expected ricker, gaussian, gaussian-derivative or file)",
                    other.escape_debug()
                )),
                ))
            }
        }
        .map_err(|e| self.error(&wspan, here(&e.to_string())))?;
        let source_kind = match (kind, &s.amplitude, &s.force, &s.moment) {
            (WaveKind::Acoustic, a, None, None) => SourceKind::Monopole {
                amplitude: a.as_ref().map_or(1.0, |a| *a.get_ref()),
            },
            (WaveKind::Elastic, None, Some(f), None) => {
                SourceKind::Force(self.point(f.get_ref(), &f.span(), dim, &here("force"))?)
            }
            (WaveKind::Elastic, None, None, Some(m)) => {
                let v = m.get_ref();
                let mut t = [[0.0; 3]; 3];
                let pairs: &[(usize, usize)] = if dim == 2 {
                    &[(0, 0), (1, 1), (0, 1)]
                } else {
                    &[(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]
                };
                if v.len() != pairs.len() || v.iter().any(|x| !x.is_finite()) {
                    return Err(self.error(
                        &m.span(),
                        here(if dim == 2 {
                            "moment: expected [mxx, myy, mxy]"
                        } else {
                            "moment: expected [mxx, myy, mzz, mxy, mxz, myz]"
                        }),
                    ));
                }
                for (&(r, c), &x) in pairs.iter().zip(v) {
                    t[r][c] = x;
                    t[c][r] = x;
                }
                SourceKind::Moment(t)
            }
            (WaveKind::Acoustic, _, _, _) => {
                return Err(self.error(span, here("acoustic sources take `amplitude` only")))
            }
            (WaveKind::Elastic, ..) => {
                return Err(self.error(span, here("elastic sources take `force` or `moment`")))
            }
        };
        Ok(Source {
            name,
            position,
            kind: source_kind,
            wavelet,
        })
    }

    fn wave_receivers(
        &self,
        i: usize,
        r: &ReceiverSection,
        span: &Range<usize>,
        dim: usize,
    ) -> Result<Vec<Receiver>, PipelineError> {
        let prefix = r.name.clone().unwrap_or_else(|| format!("r{i}_"));
        let here = |what: &str| format!("receiver `{prefix}`: {what}");
        let line = |l: &LineSection| -> Result<Vec<Receiver>, PipelineError> {
            let from = self.point(&l.from, span, dim, &here("line from"))?;
            let to = self.point(&l.to, span, dim, &here("line to"))?;
            if l.count == 0 || l.count > 1_000_000 {
                return Err(self.error(span, here("line count: 1 to 10⁶")));
            }
            Ok(Receiver::line(&prefix, from, to, l.count))
        };
        match (&r.at, &r.line, &r.grid) {
            (Some(at), None, None) => {
                let x = self.point(at, span, dim, &here("at"))?;
                let name = r.name.clone().unwrap_or_else(|| format!("r{i}"));
                Ok(vec![Receiver::new(name, x)])
            }
            (None, Some(l), None) => line(l),
            (None, None, Some(g)) => {
                let from = self.point(&g.from, span, dim, &here("grid from"))?;
                let to = self.point(&g.to, span, dim, &here("grid to"))?;
                if g.count.len() != dim
                    || g.count.contains(&0)
                    || g.count.iter().product::<usize>() > 1_000_000
                {
                    return Err(self.error(
                        span,
                        here(&format!(
                            "grid count: {dim} counts of at least 1, at most 10⁶ points"
                        )),
                    ));
                }
                let mut out = Vec::new();
                let total: usize = g.count.iter().product();
                let width = total.saturating_sub(1).max(1).to_string().len();
                for k in 0..total {
                    let mut rest = k;
                    let x: [f64; 3] = std::array::from_fn(|a| {
                        if a >= dim {
                            return 0.0;
                        }
                        let n = g.count[a];
                        let j = rest % n;
                        rest /= n;
                        let s = if n > 1 {
                            j as f64 / (n - 1) as f64
                        } else {
                            0.0
                        };
                        from[a] + s * (to[a] - from[a])
                    });
                    out.push(Receiver::new(format!("{prefix}{k:0width$}"), x));
                }
                Ok(out)
            }
            _ => Err(self.error(span, here("give one of at, line or grid"))),
        }
    }
}
