//! The CPU features the embedded components were precompiled for (both builds, by one
//! configuration), checked against this CPU before an artifact is loaded: a binary built
//! for more than this CPU has stops with a [`CpuUnsupported`] that names what is missing,
//! never with a fault inside compiled code.

include!("cpu_features.rs");

/// How the embedded component was precompiled: `baseline` (the default: a baseline of the
/// architecture, x86-64-v2 on x86_64) or `native` (`SATYRN_COMPONENT_CPU=native` at build
/// time: every feature of the build machine's CPU).
pub const COMPONENT_CPU: &str = env!("SATYRN_COMPONENT_CPU");

/// The CPU features (as `std::arch` names them) the embedded component may use.
pub fn component_features() -> impl Iterator<Item = &'static str> {
    env!("SATYRN_COMPONENT_CPU_FEATURES")
        .split(',')
        .filter(|f| !f.is_empty())
}

/// This CPU lacks features the embedded component was compiled to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuUnsupported {
    /// The missing features, as `std::arch` names them.
    pub missing: Vec<&'static str>,
    /// How the component was precompiled ([`COMPONENT_CPU`]).
    pub built_for: &'static str,
}

impl std::fmt::Display for CpuUnsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "this CPU lacks {} which the embedded component was compiled to use (built with SATYRN_COMPONENT_CPU={}); rebuild satyrn-host without SATYRN_COMPONENT_CPU (the baseline) or on this machine",
            self.missing.join(", "),
            self.built_for
        )
    }
}

impl std::error::Error for CpuUnsupported {}

/// Checks `features` against `detect` (which answers whether the CPU has a feature, `None`
/// when it cannot tell: counted as missing).
///
/// # Errors
///
/// [`CpuUnsupported`] naming every feature `detect` does not confirm.
pub fn check(
    features: impl IntoIterator<Item = &'static str>,
    detect: impl Fn(&str) -> Option<bool>,
    built_for: &'static str,
) -> Result<(), CpuUnsupported> {
    let missing: Vec<&'static str> = features
        .into_iter()
        .filter(|f| detect(f) != Some(true))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CpuUnsupported { missing, built_for })
    }
}

/// [`check`] of the embedded component's features against this CPU.
///
/// # Errors
///
/// [`CpuUnsupported`] when this CPU lacks any of them.
pub fn check_this_cpu() -> Result<(), CpuUnsupported> {
    check(component_features(), cpu_has, COMPONENT_CPU)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_cpu_runs_the_embedded_component() {
        assert_eq!(check_this_cpu(), Ok(()));
    }

    #[test]
    fn every_feature_the_component_uses_is_one_this_architecture_knows() {
        for feature in component_features() {
            assert!(cpu_has(feature).is_some(), "{feature}");
            assert!(
                KNOWN_FEATURES.iter().any(|(_, n)| *n == feature),
                "{feature}"
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_default_build_uses_the_x86_64_v2_baseline_only() {
        if COMPONENT_CPU == "baseline" {
            assert_eq!(component_features().collect::<Vec<_>>(), BASELINE_FEATURES);
        }
    }

    /// An older CPU cannot be had here: a detector that denies what the component uses
    /// stands in for one (the sibling above uses this CPU's own detection).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_cpu_without_a_feature_is_named_with_how_to_rebuild() {
        let err = check(
            ["sse3", "sse4.2", "popcnt"],
            |f| Some(f == "sse3"),
            "native",
        )
        .expect_err("an older CPU");
        assert_eq!(err.missing, ["sse4.2", "popcnt"]);
        let message = err.to_string();
        assert!(message.contains("lacks sse4.2, popcnt"), "{message}");
        assert!(message.contains("SATYRN_COMPONENT_CPU=native"), "{message}");
        assert!(message.contains("rebuild"), "{message}");
    }

    fn load_with(detect: fn(&str) -> Option<bool>) -> Result<(), String> {
        let mut config = super::super::engine_config();
        // SAFETY: only what wasmtime believes of the CPU changes; nothing is run.
        unsafe {
            config.detect_host_feature(detect);
        }
        let engine = wasmtime::Engine::new(&config).expect("engine");
        // SAFETY: the embedded artifact, as `Loaded::new` loads it; it is not run.
        unsafe {
            wasmtime::component::Component::deserialize(&engine, super::super::COMPILED_COMPONENT)
        }
        .map(drop)
        .map_err(|e| format!("{e:#}"))
    }

    /// wasmtime itself, told that the CPU lacks SSE4.2, refuses the artifact of a default
    /// build (so the baseline's features really are compiled in and checked), and told
    /// that it lacks AVX2 and BMI2, loads it (so a default build runs on a CPU without
    /// them, unlike one compiled for this machine).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_artifact_of_a_default_build_needs_the_baseline_and_nothing_more() {
        if COMPONENT_CPU != "baseline" {
            return;
        }
        let refused = load_with(|f| Some(f != "sse4.2")).expect_err("no SSE4.2");
        assert!(refused.contains("has_sse42"), "{refused}");
        load_with(|f| {
            Some(!matches!(
                f,
                "avx" | "avx2" | "bmi1" | "bmi2" | "fma" | "lzcnt"
            ))
        })
        .expect("a CPU without AVX loads the baseline artifact");
    }
}
