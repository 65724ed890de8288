//! Waves from Rust: Lamb's problem. A vertical point force (a 50 Hz Ricker) on the free
//! surface of an elastic half-space (vp = 1732 m/s, vs = 1000 m/s), modelled as a box
//! with absorbing sides and bottom; receivers on the surface record the Rayleigh wave, whose
//! speed is measured from the delay between two of them and compared with the root of the
//! Rayleigh equation. The seismograms are written as CSV and Seismic Unix files and as a
//! PNG trace gather in `examples/out/lamb/`.
//!
//! `cargo run --release --example lamb [ORDER]` (default 4; 1 to 10)

use ferrofem::base::CellType;
use ferrofem::io::{write_seismograms_csv, write_su, write_trace_gather_png, GatherPlot};
use ferrofem::io::{Seismograms, Station};
use ferrofem::mesh::{generate_box, BoxSpec};
use ferrofem::wave::analytic::rayleigh_wave_speed;
use ferrofem::wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, Receiver, RunLength, Simulation, Source,
    SourceKind, WaveKind, WaveSetup, Wavelet,
};
use std::error::Error;
use std::path::Path;

fn main() -> Result<(), Box<dyn Error>> {
    let order: usize = std::env::args().nth(1).map_or(Ok(4), |s| s.parse())?;
    let (vp, vs, rho, f0) = (3f64.sqrt() * 1000.0, 1000.0, 2000.0, 50.0);
    let wavelength = vs / f0;
    // 40 x 8 shear wavelengths, elements of a fifth of a wavelength at order 4
    let cells = [(200 * 4) / order.max(1), (40 * 4) / order.max(1)];
    let mut spec = BoxSpec::unit(CellType::Quadrilateral, &cells);
    spec.min = vec![0.0, -8.0 * wavelength];
    spec.max = vec![40.0 * wavelength, 0.0];
    let mesh = generate_box(&spec)?;

    let xs = 4.0 * wavelength;
    let mut setup = WaveSetup::new(
        WaveKind::Elastic,
        order,
        Medium::Uniform(Material { rho, vp, vs }),
        1,
    );
    // the top (ymax) is a free surface: the natural condition
    setup.boundaries = ["xmin", "xmax", "ymin"]
        .map(|side| BoundarySpec::new(side, BoundaryCondition::Absorbing))
        .to_vec();
    setup.sources = vec![Source {
        name: "force".into(),
        position: [xs, 0.0, 0.0],
        kind: SourceKind::Force([0.0, -1e6, 0.0]),
        wavelet: Wavelet::ricker(f0, None)?,
    }];
    setup.receivers = Receiver::line(
        "s",
        [xs + 6.0 * wavelength, 0.0, 0.0],
        [xs + 30.0 * wavelength, 0.0, 0.0],
        9,
    );
    let c_rayleigh = rayleigh_wave_speed(vp, vs)?;
    setup.time.length = RunLength::Duration(30.0 * wavelength / c_rayleigh + 3.0 / f0);

    let mut sim = Simulation::<f64>::new(&mesh, &setup)?;
    println!(
        "{} elements of order {order}, {} dofs, {} steps of {:.3e} s",
        mesh.num_cells(),
        sim.space().num_dofs(),
        sim.steps(),
        sim.dt()
    );
    let start = std::time::Instant::now();
    sim.run(|_| {})?;
    println!("ran in {:.2} s", start.elapsed().as_secs_f64());

    // the Rayleigh wave's arrival: the largest |u_y| at the first and last receivers
    let dt = sim.dt();
    let peak_time = |r: usize| {
        let trace = sim.trace(r, 1);
        let (k, _) = trace
            .iter()
            .enumerate()
            .fold((0, 0.0f64), |(bk, bv), (k, v)| {
                if v.abs() > bv {
                    (k, v.abs())
                } else {
                    (bk, bv)
                }
            });
        k as f64 * dt
    };
    let last = setup.receivers.len() - 1;
    let distance = setup.receivers[last].position[0] - setup.receivers[0].position[0];
    let speed = distance / (peak_time(last) - peak_time(0));
    println!(
        "Rayleigh wave: {speed:.1} m/s measured, {c_rayleigh:.1} m/s in theory ({:+.2} %)",
        100.0 * (speed / c_rayleigh - 1.0)
    );

    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/out/lamb");
    std::fs::create_dir_all(&out)?;
    let stations: Vec<Station> = sim
        .receivers()
        .iter()
        .map(|r| Station::new(r.name.clone(), r.position))
        .collect();
    let seismograms = Seismograms {
        t0: 0.0,
        dt,
        stations: &stations,
        components: &["ux", "uy"],
        samples: sim.seismograms(),
    };
    for path in write_seismograms_csv(out.join("seis"), &seismograms)? {
        println!("wrote {}", path.display());
    }
    write_su(out.join("seis_uy.su"), &seismograms, 1)?;
    write_trace_gather_png(
        out.join("seis_uy.png"),
        &seismograms,
        1,
        &GatherPlot::default(),
    )?;
    println!("wrote {0}/seis_uy.su and {0}/seis_uy.png", out.display());
    Ok(())
}
