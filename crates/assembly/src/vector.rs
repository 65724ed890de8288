//! Assembly of global vectors (right-hand sides) from element vectors.

use crate::blocks::par_new_chunks;
use crate::AssemblyError;
use ferrofem_base::Real;
use ferrofem_space::ElemRestriction;
use std::sync::Mutex;

/// The full L-vector `Σ_e R_eᵀ f_e` of the element vectors `f(e, out)` (E-vector layout
/// `c * elem_size + i`; `out` is zeroed before the call).
///
/// Element vectors are computed in parallel into an E-vector, then summed per node through
/// the restriction's transpose: race-free, and deterministic (each entry adds in increasing
/// element order). Restrict the result to free dofs with [`crate::DofMap::restrict`]; for a
/// right-hand side with Dirichlet values moved over use [`crate::assemble_system`].
pub fn assemble_vector<T, F>(r: &ElemRestriction, f: F) -> Result<Vec<T>, AssemblyError>
where
    T: Real,
    F: Fn(usize, &mut [T]) + Sync,
{
    let n = r.ncomp() * r.elem_size();
    if n == 0 {
        return Ok(vec![T::zero(); r.lvec_len()]);
    }
    // the lowest failing element, for a deterministic report
    let bad = Mutex::new(None::<(usize, usize, f64)>);
    let ev = par_new_chunks(
        r.evec_len(),
        n,
        T::zero(),
        "the element vector buffer",
        || (),
        |_, e, out| {
            f(e, out);
            if let Some(q) = out.iter().position(|v| !v.is_finite()) {
                let mut g = bad.lock().unwrap_or_else(|p| p.into_inner());
                if g.is_none_or(|(e0, _, _)| e < e0) {
                    *g = Some((e, q, out[q].as_f64()));
                }
            }
        },
    )?;
    if let Some((element, entry, value)) = bad.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(AssemblyError::NonFiniteElementVector {
            element,
            entry,
            value,
        });
    }
    let mut l = vec![T::zero(); r.lvec_len()];
    r.scatter_add_by_node(&r.transpose(), &ev, &mut l);
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_sums_shared_nodes_and_reports_nan() {
        let r = ElemRestriction::new(2, 2, 3, vec![0, 1, 1, 2]);
        // element e: component c of local node i gets 1 + e + 10 c
        let l = assemble_vector::<f64, _>(&r, |e, out| {
            for c in 0..2 {
                for i in 0..2 {
                    out[c * 2 + i] = 1.0 + e as f64 + 10.0 * c as f64;
                }
            }
        })
        .unwrap();
        assert_eq!(l, vec![1.0, 11.0, 3.0, 23.0, 2.0, 12.0]);
        let err = assemble_vector::<f32, _>(&r, |e, out| {
            if e == 1 {
                out[3] = f32::NAN;
            }
        });
        assert!(matches!(
            err,
            Err(AssemblyError::NonFiniteElementVector {
                element: 1,
                entry: 3,
                ..
            })
        ));
    }
}
