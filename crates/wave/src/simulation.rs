//! The explicit spectral-element time loop.
//!
//! Semi-discrete, `M ü + C u̇ + K u = F(t)`: `M` the lumped GLL mass (diagonal), `C` the
//! lumped Stacey damping of absorbing faces (nonzero only on their nodes), `K` the
//! stiffness applied matrix-free by the sum-factorised tensor operator. Central
//! differences (the leapfrog), with the damping term centred too:
//!
//! `(M + dt/2 C) u^{k+1} = 2 M u^k − (M − dt/2 C) u^{k−1} + dt² (F(t_k) − K u^k)`,
//!
//! which away from absorbing nodes is `u^{k+1} = 2u^k − u^{k−1} + dt² M⁻¹ (F − K u^k)`.
//!
//! **Time axis.** `t_k = k dt` from the start; the state after `k` steps is the field at
//! `t_k`; step `k → k+1` uses the sources at `t_k`. Sample `k` of a seismogram is the
//! field after `k` steps, so a run of `S` steps records `S + 1` samples, the first the
//! initial (zero) field.
//!
//! **Energy.** Without sources and damping the leapfrog conserves
//! `E^{k+1/2} = ½ v ᵀ M v + ½ (u^{k+1})ᵀ K u^k` with `v = (u^{k+1} − u^k)/dt` exactly (up to
//! rounding); it is computed every few steps, and a non-finite value, or growth after the
//! sources have stopped, stops the run.
//!
//! **On a part of a distributed mesh** ([`Simulation::on_part`], see
//! [`crate::distribution`]) the same loop runs on the rank's cells, with `K u − F` summed
//! across the interfaces before the update, the mass, damping and held nodes summed once at
//! set-up, and the energy summed over the ranks.

use crate::boundary::{setup_boundaries_on, BoundarySetup, BoundarySpec};
use crate::cfl::{stable_step, StableStep};
use crate::distribution::{sum_shared, NodeExchange, WavePart};
use crate::mass::lumped_mass;
use crate::points::{place_source, stencil, PlacedSource, Receiver, Source, Stencil};
use crate::{Medium, WaveError, WaveKind};
use ferrofem_base::{FlushSubnormals, Real};
use ferrofem_geometry::{CellMap, PointLocator};
use ferrofem_mesh::Mesh;
use ferrofem_operator::tensor::{
    lane_numbering, Coefficient, Diffusion, Elastic, Form, Mass, PhysicsOptions, PointGeometry,
    Quadrature, TensorOperator,
};
use ferrofem_space::H1Space;
use rayon::prelude::*;
use std::sync::Arc;

/// Largest supported order.
pub const MAX_ORDER: usize = 10;

/// Entries per task of the parallel vector updates.
const CHUNK: usize = 1 << 14;

/// How long to run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RunLength {
    /// A number of steps.
    Steps(usize),
    /// A physical duration (s): the steps are `ceil(duration / dt)`.
    Duration(f64),
}

/// The time step and run length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeSpec {
    /// The step (s); `None`: the stable step of the mesh and medium.
    pub dt: Option<f64>,
    /// How long to run.
    pub length: RunLength,
}

/// A distributed force density `f(x, t)` (the right-hand side of the equations of
/// [`WaveKind`]): writes its `ncomp` components at point `x` and time `t` to the slice.
pub type BodyForce = Arc<dyn Fn(&[f64; 3], f64, &mut [f64]) + Send + Sync>;

/// Everything that defines a wave simulation on a mesh.
#[derive(Clone)]
pub struct WaveSetup {
    /// Acoustic or elastic.
    pub kind: WaveKind,
    /// Polynomial order (1 to [`MAX_ORDER`]).
    pub order: usize,
    /// The medium.
    pub medium: Medium,
    /// Boundary conditions by boundary name (unnamed boundaries are natural).
    pub boundaries: Vec<BoundarySpec>,
    /// Sources.
    pub sources: Vec<Source>,
    /// Receivers.
    pub receivers: Vec<Receiver>,
    /// Time step and run length.
    pub time: TimeSpec,
    /// Steps between energy checks (0: about 200 checks per run).
    pub check_every: usize,
    /// A distributed force (manufactured solutions, volume sources), integrated with the
    /// GLL quadrature: `F_i += W_i f(x_i, t)`, `W_i = Σ w det J` at node `i`.
    pub body_force: Option<BodyForce>,
}

impl std::fmt::Debug for WaveSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaveSetup")
            .field("kind", &self.kind)
            .field("order", &self.order)
            .field("medium", &self.medium)
            .field("boundaries", &self.boundaries)
            .field("sources", &self.sources)
            .field("receivers", &self.receivers)
            .field("time", &self.time)
            .field("check_every", &self.check_every)
            .field("body_force", &self.body_force.as_ref().map(|_| ".."))
            .finish()
    }
}

impl WaveSetup {
    /// A setup with no boundary conditions, sources, receivers or body force, the stable
    /// step and `steps` steps.
    pub fn new(kind: WaveKind, order: usize, medium: Medium, steps: usize) -> WaveSetup {
        WaveSetup {
            kind,
            order,
            medium,
            boundaries: Vec::new(),
            sources: Vec::new(),
            receivers: Vec::new(),
            time: TimeSpec {
                dt: None,
                length: RunLength::Steps(steps),
            },
            check_every: 0,
            body_force: None,
        }
    }
}

/// Where a run stands, for progress displays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Steps done.
    pub step: usize,
    /// Steps in the run.
    pub steps: usize,
    /// The time reached (s).
    pub time: f64,
    /// The discrete energy at the last check.
    pub energy: f64,
}

/// A spectral-element wave simulation with fields in `T` (`f32` or `f64`).
pub struct Simulation<T: Real> {
    kind: WaveKind,
    dim: usize,
    space: H1Space,
    stiffness: TensorOperator<T>,
    /// `dt² M⁻¹` per node, zero on held nodes.
    dt2_minv: Vec<T>,
    /// `dt2_minv` per dof for the CPU update of a vector field (empty until the CPU steps;
    /// a scalar field uses `dt2_minv`).
    dof_scale: Vec<T>,
    /// The lumped mass per node.
    mass: Vec<f64>,
    absorbing: Vec<AbsorbingNode>,
    sources: Vec<PlacedSource>,
    receivers: Vec<Receiver>,
    receiver_stencils: Vec<Stencil>,
    /// `[receiver][component][sample]`.
    seismograms: Vec<f64>,
    dt: f64,
    steps: usize,
    step: usize,
    stable: StableStep,
    source_end: f64,
    watch: BlowUpWatch,
    check_every: usize,
    u_prev: Vec<T>,
    u: Vec<T>,
    ku: Vec<T>,
    energy: f64,
    body_force: Option<(BodyForce, Vec<f64>)>,
    /// Per node: held at zero by a boundary condition.
    held: Vec<bool>,
    /// Whether both fields are still zero (no step taken, no state set).
    at_rest: bool,
    /// The exchange with the other ranks of a distributed mesh (`None`: the whole mesh).
    exchange: Option<Arc<dyn NodeExchange>>,
    /// Cells `0..interface_cells` hold every node shared with another rank (0 for the
    /// whole mesh).
    interface_cells: usize,
    /// Per node: owned by another rank (empty for the whole mesh).
    foreign: Vec<bool>,
}

/// One absorbing node: its dofs' update `u⁺ = A₊⁻¹ (2 m u − A₋ u⁻ − dt² r)` with the
/// `ncomp × ncomp` matrices `A± = m I ± dt/2 C` (row-major in the first `ncomp²` entries)
/// and `r = K u − F`.
#[derive(Clone, Debug)]
pub struct AbsorbingNode {
    /// The node (its dofs are `node · ncomp + c`).
    pub node: u32,
    /// The lumped mass of each of its dofs.
    pub mass: f64,
    /// The lumped damping `C`.
    pub damping: [f64; 9],
    /// `A₊⁻¹`.
    pub plus_inv: [f64; 9],
    /// `A₋`.
    pub minus: [f64; 9],
}

/// A source's load on the dofs at time `t`: `F[dofs[i]] += weights[i] · wavelet(t)`.
#[derive(Clone, Copy, Debug)]
pub struct SourceLoad<'a> {
    /// The dofs it loads.
    pub dofs: &'a [u32],
    /// Their weights.
    pub weights: &'a [f64],
    /// Its time function.
    pub wavelet: &'a crate::Wavelet,
}

/// How a receiver samples the field: `Σ values[i] · u[nodes[i] · ncomp + c]` for component `c`.
#[derive(Clone, Copy, Debug)]
pub struct ReceiverStencil<'a> {
    /// The nodes of the element holding the receiver.
    pub nodes: &'a [u32],
    /// The basis values at the receiver.
    pub values: &'a [f64],
}

/// The blow-up rule of the time loop, shared by every backend: a non-finite energy, or
/// energy growth by more than 2× after the last source has stopped.
#[derive(Clone, Copy, Debug)]
pub struct BlowUpWatch {
    source_end: f64,
    energy_after_sources: Option<f64>,
}

impl BlowUpWatch {
    /// A watch for sources that act until `source_end` (s; infinite for a body force).
    pub fn new(source_end: f64) -> BlowUpWatch {
        BlowUpWatch {
            source_end,
            energy_after_sources: None,
        }
    }

    /// Checks the energy `e` at `time`: what went wrong, if anything.
    pub fn check(&mut self, e: f64, time: f64) -> Option<String> {
        if !e.is_finite() {
            return Some(format!("the energy is {e}"));
        }
        if time <= self.source_end {
            return None;
        }
        match self.energy_after_sources {
            None => {
                self.energy_after_sources = Some(e);
                None
            }
            Some(e0) if e > 2.0 * e0 && e > 0.0 => Some(format!(
                "the energy grew from {e0:e} to {e:e} after the sources stopped"
            )),
            Some(_) => None,
        }
    }
}

/// The blow-up error for field `u` (an L-vector of `space`) at `step` and `time`: names
/// the node (and its position) with the largest value.
pub fn blow_up_error<T: Real>(
    space: &H1Space,
    u: &[T],
    step: usize,
    time: f64,
    what: String,
) -> WaveError {
    let nc = space.ncomp();
    let (dof, _) =
        u.iter()
            .enumerate()
            .map(|(i, v)| (i, v.as_f64()))
            .fold((0, -1.0), |(bi, bv), (i, v)| {
                let a = if v.is_finite() {
                    v.abs()
                } else {
                    f64::INFINITY
                };
                if a > bv {
                    (i, a)
                } else {
                    (bi, bv)
                }
            });
    let node = dof / nc;
    let c = space.node_coord(node);
    WaveError::BlowUp {
        step,
        time,
        what,
        node,
        x: std::array::from_fn(|a| c.get(a).copied().unwrap_or(0.0)),
    }
}

/// `(A₊⁻¹, A₋)` with `A± = m I ± dt/2 C` for an `nc × nc` damping `c`.
fn damped_mass(nc: usize, m: f64, c: &[f64; 9], dt: f64) -> ([f64; 9], [f64; 9]) {
    let mut plus = [0.0; 9];
    let mut minus = [0.0; 9];
    for r in 0..nc {
        for s in 0..nc {
            let id = if r == s { m } else { 0.0 };
            plus[r * nc + s] = id + 0.5 * dt * c[r * nc + s];
            minus[r * nc + s] = id - 0.5 * dt * c[r * nc + s];
        }
    }
    (invert(nc, &plus), minus)
}

impl<T: Real> Simulation<T> {
    /// Sets up `setup` on `mesh`: checks every input, builds the stiffness, the lumped mass
    /// and the damping, locates sources and receivers and fixes the time step. Nothing is
    /// run yet.
    pub fn new(mesh: &Mesh, setup: &WaveSetup) -> Result<Simulation<T>, WaveError> {
        Simulation::build(mesh, setup, true, None)
    }

    /// [`Simulation::new`] on one rank's part of a distributed mesh: `mesh` is the part's
    /// mesh, `part` its place in the whole (see [`crate::distribution`]). Sources and
    /// receivers are placed on the lowest rank that finds them; the time step is the
    /// whole mesh's. Collective, as is every step.
    pub fn on_part(
        mesh: &Mesh,
        setup: &WaveSetup,
        part: &dyn WavePart,
    ) -> Result<Simulation<T>, WaveError> {
        Simulation::build(mesh, setup, true, Some(part))
    }

    /// [`Simulation::on_part`] for a rank whose steps run on a device, numbered as
    /// [`Simulation::for_device`] numbers its nodes. Collective.
    pub fn for_device_on_part(
        mesh: &Mesh,
        setup: &WaveSetup,
        part: &dyn WavePart,
    ) -> Result<Simulation<T>, WaveError> {
        Simulation::build(mesh, setup, false, Some(part))
    }

    /// [`Simulation::new`] for a simulation whose steps run on a device (a GPU takes over
    /// its data): the nodes keep the space's numbering instead of the order the CPU
    /// kernels' batches prefer, which saves that renumbering. It still steps on the CPU,
    /// more slowly.
    pub fn for_device(mesh: &Mesh, setup: &WaveSetup) -> Result<Simulation<T>, WaveError> {
        Simulation::build(mesh, setup, false, None)
    }

    fn build(
        mesh: &Mesh,
        setup: &WaveSetup,
        lanes: bool,
        part: Option<&dyn WavePart>,
    ) -> Result<Simulation<T>, WaveError> {
        let ct = mesh.cell_type();
        if !ct.is_tensor() {
            return Err(WaveError::NotTensorMesh(ct));
        }
        let order = setup.order;
        if !(1..=MAX_ORDER).contains(&order) {
            return Err(WaveError::Order(order));
        }
        let d = mesh.dim();
        let kind = setup.kind;
        let ncomp = kind.components(d);
        // nodes numbered for the kernels' batches (runs of consecutive nodes across lanes)
        let ordered = H1Space::new(mesh, order, 1)?;
        let lane_of = lanes.then(|| lane_numbering(ordered.restriction()));
        let scalar = match &lane_of {
            Some(new_of) => ordered.renumbered(new_of),
            None => ordered.clone(),
        };
        let space = if ncomp == 1 {
            scalar.clone()
        } else {
            scalar.with_ncomp(ncomp)?
        };
        let r = scalar.restriction();
        let exchange: Option<Arc<dyn NodeExchange>> = match part {
            Some(p) => Some(Arc::from(p.connect(&scalar)?)),
            None => None,
        };
        let interface_cells = part.map_or(0, |p| p.interface_cells());
        let medium = &setup.medium;
        // (a medium constant per cell is checked at one point of each, its first vertex, so
        // that the nodes' coordinates are not needed)
        let pad =
            |c: &[f64]| -> [f64; 3] { std::array::from_fn(|a| if a < d { c[a] } else { 0.0 }) };
        let vmax = medium.check(mesh, kind, mesh.num_cells(), |e| {
            if medium.is_cellwise() {
                return vec![pad(mesh.vertex(mesh.cell(e)[0] as usize))];
            }
            r.elem(e)
                .iter()
                .map(|&n| pad(scalar.node_coord(n as usize)))
                .collect()
        })?;
        let mut stable = stable_step(mesh, &scalar, &vmax);
        if let Some(ex) = exchange.as_deref() {
            // the whole mesh's step, with the spacing and speed of the rank that sets it
            let bound = ex.min(stable.bound)?;
            let setter = ex.first_rank_with(stable.bound == bound)? == Some(ex.rank());
            stable.h_min = ex.sum(if setter { stable.h_min } else { 0.0 })?;
            stable.velocity = ex.sum(if setter { stable.velocity } else { 0.0 })?;
            stable.bound = bound;
        }
        let dt = match setup.time.dt {
            None => stable.bound,
            Some(dt) if !(dt.is_finite() && dt > 0.0) => {
                return Err(WaveError::Invalid(format!(
                    "the time step must be positive, got {dt}"
                )))
            }
            Some(dt) if dt > stable.bound => {
                return Err(WaveError::TimeStep {
                    dt,
                    bound: stable.bound,
                    h_min: stable.h_min,
                    velocity: stable.velocity,
                })
            }
            Some(dt) => dt,
        };
        let steps = match setup.time.length {
            RunLength::Steps(n) => n,
            RunLength::Duration(t) if t.is_finite() && t > 0.0 => (t / dt - 1e-9).ceil() as usize,
            RunLength::Duration(t) => {
                return Err(WaveError::Invalid(format!(
                    "the duration must be positive, got {t}"
                )))
            }
        };
        if steps == 0 {
            return Err(WaveError::Invalid("the run needs at least one step".into()));
        }
        let receivers_len = setup.receivers.len() * ncomp * (steps + 1);
        if receivers_len > (1usize << 33) {
            return Err(WaveError::Invalid(format!(
                "{} receivers × {} samples do not fit in memory",
                setup.receivers.len(),
                steps + 1
            )));
        }
        // operators: material coefficients evaluated at the GLL points
        let tags: Arc<[i32]> = Arc::from(mesh.cell_tags().to_vec());
        let coef = |f: fn(&crate::Material) -> f64| {
            if medium.is_cellwise() {
                // one value per element: the set-up of affine elements then computes one
                // point per element
                let values: Vec<f64> = (0..mesh.num_cells())
                    .into_par_iter()
                    .map(|e| {
                        let tag = tags.get(e).copied().unwrap_or(0);
                        medium.at(tag, &[0.0; 3]).map(|m| f(&m)).unwrap_or(f64::NAN)
                    })
                    .collect();
                return Coefficient::PerElement(values.into());
            }
            let medium = medium.clone();
            let tags = tags.clone();
            Coefficient::field(move |p: &PointGeometry| {
                let tag = tags.get(p.elem).copied().unwrap_or(0);
                medium.at(tag, &p.x).map(|m| f(&m)).unwrap_or(f64::NAN)
            })
        };
        let colloc = PhysicsOptions::new(Quadrature::Collocated);
        let (stiff_form, mass_coef): (Form<T>, Coefficient) = match kind {
            WaveKind::Acoustic => (
                Form::Diffusion(Diffusion {
                    ncomp: 1,
                    kappa: coef(|m| 1.0 / m.rho),
                    alpha: 0.0,
                }),
                coef(|m| 1.0 / m.kappa()),
            ),
            WaveKind::Elastic => (
                Form::Elastic(Elastic {
                    dim: d,
                    lambda: coef(|m| m.lambda()),
                    mu: coef(|m| m.mu()),
                }),
                coef(|m| m.rho),
            ),
        };
        // (the stiffness and the lumped mass set up side by side: each has stretches that
        // do not fill the threads; the mass is summed in the cells' order of the nodes, which
        // its parallel sum needs)
        let (stiffness, mass) = rayon::join(
            || TensorOperator::<T>::with_physics(mesh, &space, stiff_form, &colloc),
            || lumped_mass(mesh, &ordered, mass_coef, &colloc),
        );
        let (stiffness, mass) = (stiffness?, mass?);
        drop(ordered);
        let mut mass = match &lane_of {
            Some(new_of) => {
                let mut m = vec![0.0; mass.len()];
                for (old, &new) in new_of.iter().enumerate() {
                    m[new as usize] = mass[old];
                }
                m
            }
            None => mass,
        };
        if let Some(ex) = exchange.as_deref() {
            ex.sum_shared_f64(&mut mass, 1)?;
        }
        let body_force = match &setup.body_force {
            None => None,
            Some(f) => {
                let mut w = vec![0.0; space.num_dofs()];
                let unit =
                    TensorOperator::<f64>::with_physics(mesh, &space, Mass::unit(ncomp), &colloc)?;
                unit.try_apply(&vec![1.0; space.num_dofs()], &mut w)?;
                if let Some(ex) = exchange.as_deref() {
                    ex.sum_shared_f64(&mut w, ncomp)?;
                }
                Some((f.clone(), w))
            }
        };
        // boundaries
        let BoundarySetup {
            zero_nodes,
            absorbing,
        } = setup_boundaries_on(
            mesh,
            &scalar,
            kind,
            medium,
            &setup.boundaries,
            part.zip(exchange.as_deref())
                .map(|(p, ex)| (p.boundary_facets(), ex)),
        )?;
        let mut held = vec![false; scalar.num_nodes()];
        for &n in &zero_nodes {
            held[n as usize] = true;
        }
        let dt2_minv: Vec<T> = mass
            .par_iter()
            .zip(&held)
            .map(|(&m, &h)| if h { T::zero() } else { T::of(dt * dt / m) })
            .collect();
        let absorbing: Vec<AbsorbingNode> = absorbing
            .into_iter()
            .map(|(node, c)| {
                let m = mass[node as usize];
                let (plus_inv, minus) = damped_mass(ncomp, m, &c, dt);
                AbsorbingNode {
                    node,
                    mass: m,
                    damping: c,
                    plus_inv,
                    minus,
                }
            })
            .collect();
        // sources and receivers
        let locator = PointLocator::new(mesh)?;
        let map = CellMap::new(mesh)?;
        let mut sources = Vec::with_capacity(setup.sources.len());
        let mut source_end = 0.0f64;
        for (i, src) in setup.sources.iter().enumerate() {
            let name = if src.name.is_empty() {
                format!("#{i}")
            } else {
                src.name.clone()
            };
            let found = stencil(&locator, &map, &scalar, "source", &name, &src.position);
            if let Some(st) = place_on_rank(exchange.as_deref(), found)? {
                sources.push(place_source(&st, src, kind, mesh, medium)?);
            }
            source_end = source_end.max(src.wavelet.end_time());
        }
        let receiver_stencils = setup
            .receivers
            .iter()
            .map(|rc| {
                let found = stencil(&locator, &map, &scalar, "receiver", &rc.name, &rc.position);
                // a receiver on another rank records nothing here
                Ok(
                    place_on_rank(exchange.as_deref(), found)?.unwrap_or_else(|| Stencil {
                        cell: usize::MAX,
                        nodes: Vec::new(),
                        values: Vec::new(),
                        grads: Vec::new(),
                    }),
                )
            })
            .collect::<Result<Vec<_>, WaveError>>()?;
        if setup.body_force.is_some() {
            // a body force may act for the whole run: the energy may grow throughout
            source_end = f64::INFINITY;
        }
        let check_every = if setup.check_every == 0 {
            (steps / 200).max(1)
        } else {
            setup.check_every
        };
        let n = space.num_dofs();
        let foreign = match exchange.as_deref() {
            Some(ex) => (0..scalar.num_nodes()).map(|n| !ex.is_owned(n)).collect(),
            None => Vec::new(),
        };
        let mut sim = Simulation {
            kind,
            dim: d,
            space,
            stiffness,
            dt2_minv,
            dof_scale: Vec::new(),
            mass,
            absorbing,
            sources,
            receivers: setup.receivers.clone(),
            receiver_stencils,
            seismograms: vec![0.0; receivers_len],
            dt,
            steps,
            step: 0,
            stable,
            source_end,
            watch: BlowUpWatch::new(source_end),
            check_every,
            u_prev: vec![T::zero(); n],
            u: vec![T::zero(); n],
            ku: vec![T::zero(); n],
            energy: 0.0,
            body_force,
            held,
            at_rest: true,
            exchange,
            interface_cells,
            foreign,
        };
        if lanes {
            // (the CPU steps: their per-dof scale now, outside the timed steps)
            sim.expand_dof_scale();
        }
        sim.record();
        Ok(sim)
    }

    /// Acoustic or elastic.
    pub fn kind(&self) -> WaveKind {
        self.kind
    }
    /// The time step (s).
    pub fn dt(&self) -> f64 {
        self.dt
    }
    /// Steps in the run.
    pub fn steps(&self) -> usize {
        self.steps
    }
    /// Steps done.
    pub fn step_count(&self) -> usize {
        self.step
    }
    /// The time reached (s).
    pub fn time(&self) -> f64 {
        self.step as f64 * self.dt
    }
    /// The stable step and what sets it.
    pub fn stable_step(&self) -> StableStep {
        self.stable
    }
    /// The field's space (`ncomp` 1 for acoustic pressure, `d` for elastic displacement).
    pub fn space(&self) -> &H1Space {
        &self.space
    }
    /// The stiffness operator.
    pub fn stiffness(&self) -> &TensorOperator<T> {
        &self.stiffness
    }
    /// The lumped mass per node (of each of the node's components).
    pub fn lumped_mass(&self) -> &[f64] {
        &self.mass
    }
    /// The current field (an L-vector of [`space`](Self::space)).
    pub fn field(&self) -> &[T] {
        &self.u
    }
    /// Steps between energy checks.
    pub fn check_every(&self) -> usize {
        self.check_every
    }
    /// The discrete energy at the last check.
    pub fn energy(&self) -> f64 {
        self.energy
    }
    /// The receivers.
    pub fn receivers(&self) -> &[Receiver] {
        &self.receivers
    }
    /// The nodes this rank owns (every node of the whole mesh, serially): summed over the
    /// ranks, the whole mesh's nodes.
    pub fn owned_nodes(&self) -> usize {
        self.space().num_nodes() - self.foreign.iter().filter(|&&f| f).count()
    }
    /// The exchange with the other ranks, on a part of a distributed mesh.
    pub fn exchange(&self) -> Option<&Arc<dyn NodeExchange>> {
        self.exchange.as_ref()
    }
    /// On a part of a distributed mesh, the cells `0..interface_cells()` hold every node
    /// shared with another rank; 0 for the whole mesh.
    pub fn interface_cells(&self) -> usize {
        self.interface_cells
    }
    /// Whether local node `n` is counted here in sums over the ranks (always, for the
    /// whole mesh).
    pub fn owns_node(&self, n: usize) -> bool {
        !self.foreign.get(n).copied().unwrap_or(false)
    }
    /// Recorded components per receiver (1: pressure; `d`: displacement).
    pub fn components(&self) -> usize {
        self.kind.components(self.dim)
    }
    /// The seismograms so far, `[receiver][component][sample]` with `steps + 1` samples
    /// per trace (those not reached yet are zero).
    pub fn seismograms(&self) -> &[f64] {
        &self.seismograms
    }
    /// One trace: receiver `r`, component `c`, `steps + 1` samples.
    pub fn trace(&self, r: usize, c: usize) -> &[f64] {
        let ns = self.steps + 1;
        let nc = self.components();
        &self.seismograms[(r * nc + c) * ns..(r * nc + c + 1) * ns]
    }

    /// The field one step back (an L-vector of [`space`](Self::space)).
    pub fn previous_field(&self) -> &[T] {
        &self.u_prev
    }
    /// `dt² M⁻¹` per node, zero on nodes held at zero by the boundary conditions: the
    /// update of every component away from absorbing nodes is
    /// `u⁺ = 2u − u⁻ − step_scale · (K u − F)`.
    pub fn step_scale(&self) -> &[T] {
        &self.dt2_minv
    }
    /// Whether both fields are zero: no step taken and no initial state set.
    pub fn at_rest(&self) -> bool {
        self.at_rest
    }
    /// The absorbing nodes and their damped updates (which replace the plain update there).
    pub fn absorbing_nodes(&self) -> &[AbsorbingNode] {
        &self.absorbing
    }
    /// The sources as loads on the dofs.
    pub fn source_loads(&self) -> impl Iterator<Item = SourceLoad<'_>> {
        self.sources.iter().map(|s| SourceLoad {
            dofs: &s.dofs,
            weights: &s.weights,
            wavelet: &s.wavelet,
        })
    }
    /// How each receiver samples the field, in receiver order.
    pub fn receiver_stencils(&self) -> impl Iterator<Item = ReceiverStencil<'_>> {
        self.receiver_stencils.iter().map(|s| ReceiverStencil {
            nodes: &s.nodes,
            values: &s.values,
        })
    }
    /// The time (s) after which no source acts (infinite with a body force): the start of
    /// the blow-up rule's growth check ([`BlowUpWatch`]).
    pub fn source_end(&self) -> f64 {
        self.source_end
    }
    /// Whether a distributed body force is set ([`WaveSetup::body_force`]).
    pub fn has_body_force(&self) -> bool {
        self.body_force.is_some()
    }

    /// Sets the initial state before the first step: the fields at `t = −dt` and `t = 0`
    /// (L-vectors of [`space`](Self::space); equal ones start at rest). Dofs held at zero
    /// by the boundary conditions are set to zero. Refused after the first step.
    pub fn set_state(&mut self, previous: &[f64], current: &[f64]) -> Result<(), WaveError> {
        let n = self.u.len();
        if self.step != 0 || previous.len() != n || current.len() != n {
            return Err(WaveError::Invalid(format!(
                "set_state needs two fields of {n} values before the first step"
            )));
        }
        let nc = self.components();
        self.at_rest = false;
        for i in 0..n {
            let keep = !self.held[i / nc];
            self.u_prev[i] = if keep { T::of(previous[i]) } else { T::zero() };
            self.u[i] = if keep { T::of(current[i]) } else { T::zero() };
        }
        self.record();
        Ok(())
    }

    /// Replaces the time step before the first step, without the stability check (for
    /// experiments on stability: beyond the stable bound the run blows up and is stopped).
    /// The run keeps its number of steps.
    pub fn override_time_step(&mut self, dt: f64) -> Result<(), WaveError> {
        if self.step != 0 || !(dt.is_finite() && dt > 0.0) {
            return Err(WaveError::Invalid(format!(
                "the time step can only be replaced by a positive one before the first step, got {dt}"
            )));
        }
        let s = (dt / self.dt).powi(2);
        for m in self.dt2_minv.iter_mut().chain(&mut self.dof_scale) {
            *m = T::of(m.as_f64() * s);
        }
        let nc = self.components();
        for a in &mut self.absorbing {
            (a.plus_inv, a.minus) = damped_mass(nc, a.mass, &a.damping, dt);
        }
        self.dt = dt;
        Ok(())
    }

    /// Runs the remaining steps, calling `progress` after every energy check.
    pub fn run(&mut self, mut progress: impl FnMut(&Progress)) -> Result<(), WaveError> {
        while self.step < self.steps {
            // the steps up to the next check run on a thread of the pool, so that the
            // kernels' parallel loops start there instead of waking the pool from outside
            let target = ((self.step / self.check_every + 1) * self.check_every).min(self.steps);
            rayon::scope(|_| -> Result<(), WaveError> {
                while self.step < target {
                    self.advance(self.step + 1 == target)?;
                }
                Ok(())
            })?;
            progress(&Progress {
                step: self.step,
                steps: self.steps,
                time: self.time(),
                energy: self.energy,
            });
        }
        Ok(())
    }

    /// One step, computing the energy and checking for a blow-up when `check`.
    pub fn advance(&mut self, check: bool) -> Result<(), WaveError> {
        let nc = self.components();
        let t = self.time();
        self.at_rest = false;
        if nc > 1 && self.dof_scale.is_empty() {
            self.expand_dof_scale();
        }
        self.stiffness.try_apply(&self.u, &mut self.ku)?;
        self.subtract_sources(t);
        if let Some((f, w)) = &self.body_force {
            let d = self.dim;
            let coords = self.space.node_coords();
            let foreign = &self.foreign;
            self.ku
                .par_chunks_mut(nc)
                .zip(w.par_chunks(nc))
                .enumerate()
                .for_each(|(node, (ku, w))| {
                    // a shared node's force is added by its owner alone, then summed
                    if foreign.get(node).copied().unwrap_or(false) {
                        return;
                    }
                    let mut x = [0.0; 3];
                    x[..d].copy_from_slice(&coords[node * d..(node + 1) * d]);
                    let mut v = [0.0; 3];
                    f(&x, t, &mut v[..nc]);
                    for c in 0..nc {
                        ku[c] -= T::of(w[c] * v[c]);
                    }
                });
        }
        if let Some(ex) = self.exchange.as_deref() {
            sum_shared(ex, &mut self.ku, nc)?;
        }
        // absorbing nodes first, from the old values
        let fixed = self.absorbing_values();
        let scale = if nc == 1 {
            &self.dt2_minv
        } else {
            &self.dof_scale
        };
        // the bulk update, into u_prev, with the energy terms when checking
        let two = T::of(2.0);
        let (kin, pot) = self
            .u_prev
            .par_chunks_mut(CHUNK)
            .zip(self.u.par_chunks(CHUNK))
            .zip(self.ku.par_chunks(CHUNK))
            .zip(scale.par_chunks(CHUNK))
            .map(|(((up, u), ku), m)| {
                let _flush = FlushSubnormals::new();
                let mut kin = 0.0f64;
                let mut pot = 0.0f64;
                if check {
                    for i in 0..up.len() {
                        let next = two * u[i] - up[i] - m[i] * ku[i];
                        up[i] = next;
                        if m[i] != T::zero() {
                            let v = (next - u[i]).as_f64();
                            kin += v * v / m[i].as_f64();
                            pot += next.as_f64() * ku[i].as_f64();
                        }
                    }
                } else {
                    // iterators rather than indices: no bounds checks, so it vectorises
                    for (((p, &u), &k), &m) in up.iter_mut().zip(u).zip(ku).zip(m) {
                        *p = two * u - *p - m * k;
                    }
                }
                (kin, pot)
            })
            .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        let mut kin = kin;
        let mut pot = pot;
        for (a, vals) in self.absorbing.iter().zip(fixed.chunks_exact(nc.max(1))) {
            let base = a.node as usize * nc;
            for (c, &v) in vals.iter().enumerate() {
                let i = base + c;
                if check {
                    // replace the bulk formula's terms by the absorbing node's
                    let m = self.dt2_minv[a.node as usize];
                    let old = self.u_prev[i];
                    if m != T::zero() {
                        let vb = (old - self.u[i]).as_f64();
                        kin -= vb * vb / m.as_f64();
                        pot -= old.as_f64() * self.ku[i].as_f64();
                        let vn = (v - self.u[i]).as_f64();
                        kin += vn * vn / m.as_f64();
                        pot += v.as_f64() * self.ku[i].as_f64();
                    }
                }
                self.u_prev[i] = v;
            }
        }
        if check {
            if let Some(ex) = self.exchange.as_deref() {
                // a shared node counts on its owner alone
                for (node, _) in self.foreign.iter().enumerate().filter(|(_, &f)| f) {
                    let m = self.dt2_minv[node];
                    if m == T::zero() {
                        continue;
                    }
                    for i in node * nc..(node + 1) * nc {
                        let v = (self.u_prev[i] - self.u[i]).as_f64();
                        kin -= v * v / m.as_f64();
                        pot -= self.u_prev[i].as_f64() * self.ku[i].as_f64();
                    }
                }
                kin = ex.sum(kin)?;
                pot = ex.sum(pot)?;
            }
        }
        std::mem::swap(&mut self.u_prev, &mut self.u);
        self.step += 1;
        self.record();
        if check {
            // kin = Σ (Δu)² / (dt² M⁻¹) = Σ M v² with v = Δu/dt
            self.energy = 0.5 * kin + 0.5 * pot;
            self.check_blow_up()?;
        }
        Ok(())
    }

    /// The seismograms of the whole run so far, `[receiver][component][sample]`. On a part
    /// of a distributed mesh each receiver is recorded by the rank that placed it and the
    /// ranks' records are summed here (collective); otherwise a copy of
    /// [`Simulation::seismograms`].
    pub fn gathered_seismograms(&self) -> Result<Vec<f64>, WaveError> {
        let mut all = self.seismograms.clone();
        if let Some(ex) = self.exchange.as_deref() {
            ex.sum_all(&mut all)?;
        }
        Ok(all)
    }

    /// The per-dof copy of the step scale that the CPU update of a vector field reads.
    fn expand_dof_scale(&mut self) {
        let nc = self.components();
        self.dof_scale = (0..self.dt2_minv.len() * nc)
            .into_par_iter()
            .map(|i| self.dt2_minv[i / nc])
            .collect();
    }

    /// `K u − F(t)` in `ku`: subtracts the sources at `t` from `K u`.
    fn subtract_sources(&mut self, t: f64) {
        for s in &self.sources {
            let w = s.wavelet.value(t);
            if w != 0.0 {
                for (&dof, &wt) in s.dofs.iter().zip(&s.weights) {
                    self.ku[dof as usize] -= T::of(wt * w);
                }
            }
        }
    }

    /// The new values at the absorbing nodes (`ncomp` per node), from `u`, `u_prev` and
    /// `ku = K u − F`.
    fn absorbing_values(&self) -> Vec<T> {
        let nc = self.components();
        let dt2 = self.dt * self.dt;
        let mut fixed = Vec::with_capacity(self.absorbing.len() * nc);
        for a in &self.absorbing {
            let base = a.node as usize * nc;
            let mut rhs = [0.0; 3];
            for r in 0..nc {
                let i = base + r;
                rhs[r] = 2.0 * a.mass * self.u[i].as_f64() - dt2 * self.ku[i].as_f64();
                for s in 0..nc {
                    rhs[r] -= a.minus[r * nc + s] * self.u_prev[base + s].as_f64();
                }
            }
            for r in 0..nc {
                let v: f64 = (0..nc).map(|s| a.plus_inv[r * nc + s] * rhs[s]).sum();
                fixed.push(T::of(v));
            }
        }
        fixed
    }

    /// Samples the receivers into the current sample.
    fn record(&mut self) {
        let ns = self.steps + 1;
        let nc = self.components();
        let k = self.step;
        for (r, st) in self.receiver_stencils.iter().enumerate() {
            for c in 0..nc {
                let v: f64 = st
                    .nodes
                    .iter()
                    .zip(&st.values)
                    .map(|(&n, &phi)| phi * self.u[n as usize * nc + c].as_f64())
                    .sum();
                self.seismograms[(r * nc + c) * ns + k] = v;
            }
        }
    }

    fn check_blow_up(&mut self) -> Result<(), WaveError> {
        let time = self.time();
        match self.watch.check(self.energy, time) {
            None => Ok(()),
            Some(what) => Err(blow_up_error(&self.space, &self.u, self.step, time, what)),
        }
    }
}

/// Inverse of an `n × n` matrix (`n ≤ 3`, row-major in a 9-array), by the adjugate.
fn invert(n: usize, a: &[f64; 9]) -> [f64; 9] {
    let mut out = [0.0; 9];
    match n {
        1 => out[0] = 1.0 / a[0],
        2 => {
            let det = a[0] * a[3] - a[1] * a[2];
            out[0] = a[3] / det;
            out[1] = -a[1] / det;
            out[2] = -a[2] / det;
            out[3] = a[0] / det;
        }
        _ => {
            let m = |r: usize, c: usize| a[r * 3 + c];
            let mut j = [[0.0; 3]; 3];
            for r in 0..3 {
                for c in 0..3 {
                    j[r][c] = m(r, c);
                }
            }
            let (det, adj) = ferrofem_geometry::adjugate(3, &j);
            for r in 0..3 {
                for c in 0..3 {
                    out[r * 3 + c] = adj[r][c] / det;
                }
            }
        }
    }
    out
}

/// The stencil of a point where it is placed: on the whole mesh, where it was found; on a
/// part, on the lowest rank that found it (`None` on the others). A point no rank finds
/// is the error every rank returns.
fn place_on_rank(
    exchange: Option<&dyn NodeExchange>,
    found: Result<Stencil, WaveError>,
) -> Result<Option<Stencil>, WaveError> {
    let Some(ex) = exchange else {
        return found.map(Some);
    };
    let found = match found {
        Ok(st) => Some(Ok(st)),
        Err(e @ WaveError::Outside { .. }) => Some(Err(e)),
        Err(e) => return Err(e),
    };
    let here = matches!(found, Some(Ok(_)));
    match (ex.first_rank_with(here)?, found) {
        (Some(r), Some(Ok(st))) if r == ex.rank() => Ok(Some(st)),
        (None, Some(Err(e))) => Err(e),
        _ => Ok(None),
    }
}
