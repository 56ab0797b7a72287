//! What a plugin of 50 tools costs to define when it loads (its `init` builds the definition,
//! then the manifest): every tool found by its attribute (`export_plugin!()`, SDK 2) against the
//! same tools named in a fixed list (`PluginDef::new(..).tool(..)`, what `tools: [..]` and the
//! previous SDK build).
//!
//! `cargo bench -p toolhost-plugin --bench define`

use criterion::{criterion_group, criterion_main, Criterion};
use toolhost_plugin::{__private::PluginEntry, prelude::*, PluginDef};

macro_rules! tools {
    ($($name:ident)*) => {
        $(
            /// Add two numbers.
            #[tool(read_only)]
            fn $name(
                /// The first number.
                x: f64,
                /// The second number.
                y: f64,
            ) -> f64 {
                x + y
            }
        )*

        fn listed() -> PluginDef {
            PluginDef::new("define", "0.1.0", "50 tools")$(.tool($name::tool()))*
        }
    };
}

tools! {
    t00 t01 t02 t03 t04 t05 t06 t07 t08 t09 t10 t11 t12 t13 t14 t15 t16 t17 t18 t19
    t20 t21 t22 t23 t24 t25 t26 t27 t28 t29 t30 t31 t32 t33 t34 t35 t36 t37 t38 t39
    t40 t41 t42 t43 t44 t45 t46 t47 t48 t49
}

export_plugin! { name: "define" }

fn define(c: &mut Criterion) {
    assert_eq!(__ToolhostPlugin::define().tool_names().len(), 50);
    assert_eq!(listed().tool_names().len(), 50);
    c.bench_function("define 50 tools by attribute", |b| {
        b.iter(__ToolhostPlugin::define)
    });
    c.bench_function("define 50 tools in a list", |b| b.iter(listed));
}

criterion_group!(benches, define);
criterion_main!(benches);
