//! `#[derive(Table)]`: declares a table once, on the struct that is one of its rows.
//!
//! ```ignore
//! #[derive(Table)]
//! #[table(name = "users", index(age))]
//! pub struct User {
//!     #[column(primary_key, auto_increment)]
//!     pub id: i64,
//!     #[column(varchar = 100, unique)]
//!     pub name: String,
//!     pub age: i32,
//!     pub email: Option<String>,
//! }
//! ```
//! expands to a module `users` holding a zero-sized `table` marker and one zero-sized marker per column
//! (`users::id`, `users::name`, …) that implement `tandem_sql::Table` / `Column`, the table's schema (for
//! CREATE TABLE), arithmetic operators on the column markers, and `Entity` for the struct when it has exactly
//! one primary-key column.
//!
//! Table options: `name` (required), `module` (defaults to the name), `crate` (path of tandem-sql; by default
//! found in the deriving crate's Cargo.toml — `tandem-sql`, or the `tandem` facade's `sql`), `index(col, ..)`, `unique_index(col, ..)`. Column options: `primary_key`,
//! `auto_increment`, `unique`, `varchar = N`, `name = "…"`, `default = <literal>`, `default_now`.
//! The generated module does `use super::*`, so declare the struct at module level, not inside a function.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields, Ident, Lit, LitStr, Path, Type, parse_macro_input};

/// Derives `Table` (and `Entity` when there is one primary key) for a struct; see the crate docs.
#[proc_macro_derive(Table, attributes(table, column))]
pub fn derive_table(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(input) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

struct TableAttrs {
    name: Option<LitStr>,
    module: Option<Ident>,
    krate: Path,
    indexes: Vec<(bool, Vec<Ident>)>,
}

struct ColumnAttrs {
    field: Ident,
    ty: Type,
    name: String,
    primary_key: bool,
    auto_increment: bool,
    unique: bool,
    varchar: Option<u32>,
    default: Option<Tokens>,
}

/// Where tandem-sql is, as the deriving crate's Cargo.toml names it: `tandem-sql` itself (renamed or not),
/// or the `tandem` facade's `sql` module; `::tandem_sql` when neither is found.
fn default_crate_path() -> Path {
    use proc_macro_crate::{FoundCrate, crate_name};
    match crate_name("tandem-sql") {
        Ok(FoundCrate::Name(name)) => {
            let name = Ident::new(&name, proc_macro2::Span::call_site());
            return syn::parse_quote!(::#name);
        }
        // tandem-sql's own tests and examples name it as an external crate.
        Ok(FoundCrate::Itself) => return syn::parse_quote!(::tandem_sql),
        Err(_) => {}
    }
    match crate_name("tandem") {
        Ok(FoundCrate::Name(name)) => {
            let name = Ident::new(&name, proc_macro2::Span::call_site());
            syn::parse_quote!(::#name::sql)
        }
        Ok(FoundCrate::Itself) => syn::parse_quote!(::tandem::sql),
        Err(_) => syn::parse_quote!(::tandem_sql),
    }
}

fn parse_table_attrs(input: &DeriveInput) -> syn::Result<TableAttrs> {
    let mut attrs = TableAttrs {
        name: None,
        module: None,
        krate: default_crate_path(),
        indexes: Vec::new(),
    };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("table")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                attrs.name = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("module") {
                let s: LitStr = meta.value()?.parse()?;
                attrs.module = Some(s.parse()?);
            } else if meta.path.is_ident("crate") {
                let s: LitStr = meta.value()?.parse()?;
                attrs.krate = s.parse()?;
            } else if meta.path.is_ident("index") || meta.path.is_ident("unique_index") {
                let unique = meta.path.is_ident("unique_index");
                let mut cols = Vec::new();
                meta.parse_nested_meta(|col| {
                    cols.push(col.path.require_ident()?.unraw());
                    Ok(())
                })?;
                attrs.indexes.push((unique, cols));
            } else {
                return Err(
                    meta.error("unknown table option (name, module, crate, index, unique_index)")
                );
            }
            Ok(())
        })?;
    }
    Ok(attrs)
}

fn parse_column(field: &syn::Field) -> syn::Result<ColumnAttrs> {
    let ident = field.ident.clone().expect("named field");
    let mut col = ColumnAttrs {
        name: ident.unraw().to_string(),
        field: ident,
        ty: field.ty.clone(),
        primary_key: false,
        auto_increment: false,
        unique: false,
        varchar: None,
        default: None,
    };
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("column")) {
        attr.parse_nested_meta(|meta| {
            let p = &meta.path;
            if p.is_ident("primary_key") {
                col.primary_key = true;
            } else if p.is_ident("auto_increment") {
                col.auto_increment = true;
            } else if p.is_ident("unique") {
                col.unique = true;
            } else if p.is_ident("varchar") {
                let n: syn::LitInt = meta.value()?.parse()?;
                col.varchar = Some(n.base10_parse()?);
            } else if p.is_ident("name") {
                let s: LitStr = meta.value()?.parse()?;
                col.name = s.value();
            } else if p.is_ident("default_now") {
                col.default = Some(quote!(CurrentTimestamp));
            } else if p.is_ident("default") {
                let lit: Lit = meta.value()?.parse()?;
                col.default = Some(match lit {
                    Lit::Int(i) => {
                        let v: i64 = i.base10_parse()?;
                        quote!(Int(#v))
                    }
                    Lit::Float(f) => {
                        let v: f64 = f.base10_parse()?;
                        quote!(Float(#v))
                    }
                    Lit::Bool(b) => {
                        let v = b.value;
                        quote!(Bool(#v))
                    }
                    Lit::Str(s) => {
                        let v = s.value();
                        quote!(Text(::std::string::String::from(#v)))
                    }
                    other => return Err(syn::Error::new_spanned(other, "default must be an integer, float, bool or string")),
                });
            } else {
                return Err(meta.error(
                    "unknown column option (primary_key, auto_increment, unique, varchar, name, default, default_now)",
                ));
            }
            Ok(())
        })?;
    }
    Ok(col)
}

fn expand(input: DeriveInput) -> syn::Result<Tokens> {
    let attrs = parse_table_attrs(&input)?;
    let krate = &attrs.krate;
    let Some(table_name) = attrs.name.clone() else {
        return Err(syn::Error::new(
            Span::call_site(),
            "#[derive(Table)] needs #[table(name = \"...\")]",
        ));
    };
    let module = match &attrs.module {
        Some(m) => m.clone(),
        None => table_name.parse::<Ident>().map_err(|_| {
            syn::Error::new_spanned(
                &table_name,
                "this name is not a Rust identifier: add module = \"...\"",
            )
        })?,
    };
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(Table)] works on structs with named fields",
        ));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(Table)] works on structs with named fields",
        ));
    };
    let columns = fields
        .named
        .iter()
        .map(parse_column)
        .collect::<syn::Result<Vec<_>>>()?;
    if columns.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "a table needs at least one column",
        ));
    }
    for c in &columns {
        if c.field.unraw() == "table" {
            return Err(syn::Error::new_spanned(
                &c.field,
                "a field named `table` clashes with the table marker; rename it and add #[column(name = \"table\")]",
            ));
        }
    }
    let vis = &input.vis;
    let strukt = &input.ident;

    let mut name_checks = vec![ident_check(krate, &table_name.value(), table_name.span())];
    let mut column_defs = Vec::new();
    let mut markers = Vec::new();
    for c in &columns {
        name_checks.push(ident_check(krate, &c.name, c.field.span()));
        let (field, ty, name) = (&c.field, &c.ty, &c.name);
        let sql_type = match c.varchar {
            Some(n) => {
                name_checks.push(quote! {
                    const _: () = ::core::assert!(
                        ::core::matches!(<#ty as #krate::SqlValue>::SQL_TYPE, #krate::SqlType::Text),
                        "varchar applies to String and Option<String> fields only"
                    );
                });
                quote!(#krate::SqlType::VarChar(#n))
            }
            None => quote!(<#ty as #krate::SqlValue>::SQL_TYPE),
        };
        let (pk, ai, unique) = (c.primary_key, c.auto_increment, c.unique);
        let default = match &c.default {
            Some(d) => quote!(::core::option::Option::Some(#krate::__private::DefaultValue::#d)),
            None => quote!(::core::option::Option::None),
        };
        column_defs.push(quote! {
            #krate::__private::ColumnDef {
                name: #krate::Ident::from_static(#name),
                ty: #sql_type,
                nullable: <#ty as #krate::SqlValue>::NULLABLE,
                primary_key: #pk,
                auto_increment: #ai,
                unique: #unique,
                default: #default,
            }
        });
        let doc = format!("Column `{name}` of table `{}`.", table_name.value());
        let ops = arithmetic(krate, field);
        markers.push(quote! {
            #[doc = #doc]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct #field;
            impl #krate::typed::Column for #field {
                type Table = table;
                type Value = #ty;
                type Kind = <#ty as #krate::SqlValue>::Kind;
                const NAME: #krate::Ident = #krate::Ident::from_static(#name);
            }
            #ops
        });
    }

    let mut index_defs = Vec::new();
    for (unique, cols) in &attrs.indexes {
        let mut names = Vec::new();
        for col in cols {
            let c = columns
                .iter()
                .find(|c| c.field.unraw() == *col)
                .ok_or_else(|| syn::Error::new_spanned(col, "no such field in this struct"))?;
            names.push(c.name.clone());
        }
        let index_name = format!(
            "{}_{}_{}",
            table_name.value(),
            names.join("_"),
            if *unique { "key" } else { "idx" }
        );
        name_checks.push(ident_check(krate, &index_name, table_name.span()));
        index_defs.push(quote! {
            #krate::__private::IndexDef {
                name: #krate::Ident::from_static(#index_name),
                columns: ::std::vec![#(#krate::Ident::from_static(#names)),*],
                unique: #unique,
            }
        });
    }

    let entity = entity_impl(krate, strukt, &module, &columns)?;
    let table_doc = format!(
        "The `{}` table, declared by [`{strukt}`](super::{strukt}).",
        table_name.value()
    );
    let module_doc = format!(
        "Table `{}`: its marker and one marker per column.",
        table_name.value()
    );

    Ok(quote! {
        #[doc = #module_doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis mod #module {
            #[allow(unused_imports)]
            use super::*;

            #[doc = #table_doc]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct table;

            impl #krate::typed::Table for table {
                const NAME: #krate::Ident = #krate::Ident::from_static(#table_name);
                fn schema() -> &'static #krate::__private::TableSchema {
                    static SCHEMA: #krate::__private::OnceLock<#krate::__private::TableSchema> =
                        #krate::__private::OnceLock::new();
                    SCHEMA.get_or_init(|| #krate::__private::TableSchema {
                        name: <Self as #krate::typed::Table>::NAME,
                        columns: ::std::vec![#(#column_defs),*],
                        indexes: ::std::vec![#(#index_defs),*],
                    })
                }
            }

            #(#markers)*
            #(#name_checks)*
        }
        #entity
    })
}

/// A compile-time check that `name` is a valid SQL identifier.
fn ident_check(krate: &Path, name: &str, span: Span) -> Tokens {
    let msg = format!(
        "invalid SQL identifier {name:?} (empty, longer than 63 bytes, a control character or a trailing space)"
    );
    quote::quote_spanned! {span=>
        const _: () = ::core::assert!(#krate::ident::ident_problem(#name).is_none(), #msg);
    }
}

/// `+ - * / %` on a column marker, for numeric columns (checked through `NumericRhs`).
fn arithmetic(krate: &Path, field: &Ident) -> Tokens {
    let ops = [
        ("Add", "add", "Add"),
        ("Sub", "sub", "Sub"),
        ("Mul", "mul", "Mul"),
        ("Div", "div", "Div"),
        ("Rem", "rem", "Mod"),
    ];
    let impls = ops.iter().map(|(tr, method, op)| {
        let tr = format_ident!("{tr}");
        let method = format_ident!("{method}");
        let op = format_ident!("{op}");
        quote! {
            impl<R, K> ::core::ops::#tr<R> for #field
            where
                #field: #krate::typed::Column<Kind = K>,
                R: #krate::typed::AsExpr<K> + #krate::__private::NumericRhs<K>,
                (table, ()): #krate::typed::Concat<<R as #krate::typed::AsExpr<K>>::Sources>,
            {
                type Output = #krate::typed::SqlExpr<
                    K,
                    <(table, ()) as #krate::typed::Concat<<R as #krate::typed::AsExpr<K>>::Sources>>::Out,
                >;
                fn #method(self, rhs: R) -> Self::Output {
                    #krate::__private::__column_arith(#krate::ast::BinaryOp::#op, self, rhs)
                }
            }
        }
    });
    quote!(#(#impls)*)
}

fn entity_impl(
    krate: &Path,
    strukt: &Ident,
    module: &Ident,
    columns: &[ColumnAttrs],
) -> syn::Result<Tokens> {
    let pks: Vec<&ColumnAttrs> = columns.iter().filter(|c| c.primary_key).collect();
    if let Some(c) = columns.iter().find(|c| c.auto_increment && !c.primary_key) {
        return Err(syn::Error::new_spanned(
            &c.field,
            "auto_increment needs primary_key on the same column",
        ));
    }
    // A table without a single-column primary key is still a table for the DSL; it just has no repository.
    let [pk] = pks.as_slice() else {
        return Ok(Tokens::new());
    };
    let (pk_field, pk_ty, pk_name, generated) = (&pk.field, &pk.ty, &pk.name, pk.auto_increment);
    let fields: Vec<&Ident> = columns.iter().map(|c| &c.field).collect();
    let types: Vec<&Type> = columns.iter().map(|c| &c.ty).collect();
    let names: Vec<&String> = columns.iter().map(|c| &c.name).collect();
    let indexes: Vec<usize> = (0..columns.len()).collect();
    let insertable: Vec<&ColumnAttrs> = columns.iter().filter(|c| !c.auto_increment).collect();
    let ins_fields: Vec<&Ident> = insertable.iter().map(|c| &c.field).collect();
    let ins_names: Vec<&String> = insertable.iter().map(|c| &c.name).collect();
    Ok(quote! {
        impl #krate::typed::Entity for #strukt {
            type Table = #module::table;
            type Key = #pk_ty;
            const KEY: #krate::Ident = #krate::Ident::from_static(#pk_name);
            const GENERATED_KEY: bool = #generated;
            fn key(&self) -> Self::Key {
                ::core::clone::Clone::clone(&self.#pk_field)
            }
            fn to_values(&self) -> ::std::vec::Vec<#krate::Value> {
                ::std::vec![#(#krate::SqlValue::into_value(::core::clone::Clone::clone(&self.#fields))),*]
            }
            fn into_values(self) -> ::std::vec::Vec<#krate::Value> {
                ::std::vec![#(#krate::SqlValue::into_value(self.#fields)),*]
            }
            fn insert_columns() -> &'static [#krate::Ident] {
                const COLUMNS: &[#krate::Ident] = &[#(#krate::Ident::from_static(#ins_names)),*];
                COLUMNS
            }
            fn write_insert_values(&self, out: &mut ::std::vec::Vec<#krate::Value>) {
                #(out.push(#krate::SqlValue::into_value(::core::clone::Clone::clone(&self.#ins_fields)));)*
            }
            fn write_insert_refs<'tandem_a>(
                &'tandem_a self,
                out: &mut ::std::vec::Vec<#krate::ValueRef<'tandem_a>>,
            ) {
                #(out.push(#krate::SqlValue::to_value_ref(&self.#ins_fields));)*
            }
        }
        impl #krate::FromRow for #strukt {
            fn from_row(mut row: #krate::Row) -> #krate::Result<Self> {
                <Self as #krate::FromRow>::from_cells(&mut row)
            }
            fn from_cells<TandemCells: #krate::Cells + ?::core::marker::Sized>(
                cells: &mut TandemCells,
            ) -> ::core::result::Result<Self, TandemCells::Error> {
                ::core::result::Result::Ok(Self {
                    #(#fields: #krate::row::cell::<#types, TandemCells>(cells, #indexes, #names)?,)*
                })
            }
        }
    })
}
