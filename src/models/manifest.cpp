// SPDX-License-Identifier: Apache-2.0
#include "models/manifest.h"

#include <optional>
#include <set>

#include "core/tensor.h"
#include "core/text.h"
#include "io/json.h"

namespace wharf {
namespace {

using io::json::Kind;
using io::json::Value;

// "an object", "a string", ...: a JSON kind with its article, for messages.
std::string a_kind(Kind k) {
  const std::string n = io::json::kind_name(k);
  return (k == Kind::kObject || k == Kind::kArray ? "an " : "a ") + n;
}

// Reads a manifest's fields, each error naming the field ("methods[1].inputs[0].dtype").
class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  Status bad(const std::string& field, const std::string& what) const {
    return InvalidArgument(where_ + ": " + field + ": " + what);
  }

  // The member `key` of object `obj` (whose field name is `field`), of kind `kind`; missing:
  // an error when `required`, else *out = nullptr.
  Status member(const Value& obj, const std::string& field, const char* key, Kind kind, bool required,
                const Value** out) const {
    const std::string f = field.empty() ? key : field + "." + key;
    const Value* v = obj.find(key);
    *out = nullptr;
    if (!v)
      return required ? bad(f, std::string("missing (a required ") + io::json::kind_name(kind) + ")") : Status::Ok();
    if (v->kind() != kind) return bad(f, a_kind(kind) + " expected, got " + a_kind(v->kind()));
    *out = v;
    return Status::Ok();
  }

  Status string(const Value& obj, const std::string& field, const char* key, bool required, std::string* out) const {
    const Value* v = nullptr;
    WHARF_RETURN_IF_ERROR(member(obj, field, key, Kind::kString, required, &v));
    if (v) *out = v->as_string();
    return Status::Ok();
  }

  // A name (non-empty, no NUL).
  Status name(const Value& obj, const std::string& field, const char* key, std::string* out) const {
    WHARF_RETURN_IF_ERROR(string(obj, field, key, true, out));
    if (out->empty()) return bad(field.empty() ? key : field + "." + key, "an empty name");
    Status st = check_fqn("name", *out);
    if (!st.ok()) return bad(field.empty() ? key : field + "." + key, st.message());
    return Status::Ok();
  }

  Status uint(const Value& v, const std::string& field, uint64_t max, uint64_t* out) const {
    const std::optional<uint64_t> u = v.as_uint64();
    if (!v.is_number() || !u || *u > max)
      return bad(field, (v.is_number() ? v.number_text() : a_kind(v.kind())) + " is not an integer in [0, " +
                            std::to_string(max) + "]");
    *out = *u;
    return Status::Ok();
  }

  Status dtype(const Value& obj, const std::string& field, DType* out) const {
    std::string s;
    WHARF_RETURN_IF_ERROR(string(obj, field, "dtype", true, &s));
    if (!package_dtype_from_name(s, out)) return bad(field + ".dtype", quote_name(s) + " is not a dtype");
    return Status::Ok();
  }

  // A shape: integers, or (where `dims` is given) names of its entries, which become -1.
  Status shape(const Value& obj, const std::string& field, const Value* dims, bool symbolic_allowed, PackageTensor* t,
               std::vector<int64_t>* fixed_shape) const {
    const Value* s = nullptr;
    WHARF_RETURN_IF_ERROR(member(obj, field, "shape", Kind::kArray, true, &s));
    const std::string f = field + ".shape";
    if (s->as_array().size() > size_t(kMaxDims))
      return bad(f, std::to_string(s->as_array().size()) + " dimensions (at most " + std::to_string(kMaxDims) + ")");
    for (size_t d = 0; d < s->as_array().size(); ++d) {
      const Value& e = s->as_array()[d];
      const std::string fd = f + "[" + std::to_string(d) + "]";
      if (e.is_string()) {
        if (!symbolic_allowed)
          return bad(fd, "a symbolic dimension (" + quote_name(e.as_string()) + ") where only sizes are allowed");
        const Value* dim = dims ? dims->find(e.as_string()) : nullptr;
        if (!dim) return bad(fd, "symbolic dimension " + quote_name(e.as_string()) + " is not in the method's dims");
        int64_t lo = 0, hi = -1;
        if (dim->is_object()) {
          const Value* v = dim->find("min");
          uint64_t u = 0;
          if (v) {
            WHARF_RETURN_IF_ERROR(uint(*v, key_field("dims", e.as_string()) + ".min", uint64_t(INT64_MAX), &u));
            lo = int64_t(u);
          }
          v = dim->find("max");
          if (v) {
            WHARF_RETURN_IF_ERROR(uint(*v, key_field("dims", e.as_string()) + ".max", uint64_t(INT64_MAX), &u));
            hi = int64_t(u);
          }
        }
        t->shape.push_back(-1);
        t->dim_names.push_back(e.as_string());
        t->dim_min.push_back(lo);
        t->dim_max.push_back(hi);
        continue;
      }
      uint64_t u = 0;
      WHARF_RETURN_IF_ERROR(uint(e, fd, uint64_t(INT64_MAX), &u));
      if (t) {
        t->shape.push_back(int64_t(u));
        t->dim_names.emplace_back();
        t->dim_min.push_back(int64_t(u));
        t->dim_max.push_back(int64_t(u));
      }
      if (fixed_shape) fixed_shape->push_back(int64_t(u));
    }
    return Status::Ok();
  }

  // A fixed-size tensor's dtype and shape, checked as a whole (no overflow).
  Status fixed(const Value& obj, const std::string& field, DType* dt, std::vector<int64_t>* shape) const {
    WHARF_RETURN_IF_ERROR(dtype(obj, field, dt));
    WHARF_RETURN_IF_ERROR(this->shape(obj, field, nullptr, false, nullptr, shape));
    TensorMeta m;
    m.dtype = *dt;
    m.shape = *shape;
    Status st = m.validate("tensor");
    if (!st.ok()) return bad(field + ".shape", st.message());
    return Status::Ok();
  }

  // A path inside the package, by name: relative, no ".." (leaving it). Stored normalised,
  // without "." or empty components ("./a//b" is "a/b"), so that the duplicate check, which
  // compares names, sees one file under any spelling.
  Status path(const Value& obj, const std::string& field, const char* key, bool required, std::string* out) const {
    WHARF_RETURN_IF_ERROR(string(obj, field, key, required, out));
    if (!required && out->empty() && !obj.find(key)) return Status::Ok();
    return normal_path(field.empty() ? key : field + "." + key, *out, out);
  }

  // `p` checked and normalised into *out (which may be `p` itself).
  Status normal_path(const std::string& field, std::string p, std::string* out) const {
    if (p.empty()) return bad(field, "an empty path");
    if (p.find('\0') != std::string::npos) return bad(field, "path " + quote_path(p) + " contains a NUL byte");
    if (p[0] == '/') return bad(field, "path " + quote_path(p) + " is absolute; paths are relative to the package");
    std::string normal;
    size_t at = 0;
    while (at <= p.size()) {
      size_t slash = p.find('/', at);
      if (slash == std::string::npos) slash = p.size();
      const size_t n = slash - at;
      if (n == 2 && p.compare(at, 2, "..") == 0)
        return bad(field, "path " + quote_path(p) + " leaves the package ('..')");
      if (n > 0 && !(n == 1 && p[at] == '.')) normal += (normal.empty() ? "" : "/") + p.substr(at, n);
      at = slash + 1;
    }
    if (normal.empty()) return bad(field, "path " + quote_path(p) + " names the package directory itself");
    *out = std::move(normal);
    return Status::Ok();
  }

  // `parent.key` for a field named by a manifest key: a plain key (letters, digits, '_', '-',
  // '.': an FQN) as it is, any other quoted (a key is the manifest's text: it may hold a
  // newline or a terminal escape).
  static std::string key_field(const std::string& parent, const std::string& key) {
    bool plain = !key.empty();
    for (char c : key)
      plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                        c == '-' || c == '.');
    return (parent.empty() ? "" : parent + ".") + (plain ? key : quote_name(key));
  }

 private:
  std::string where_;
};

Status parse_tensors(const Reader& r, const Value& method, const std::string& field, const char* key, const Value* dims,
                     std::vector<PackageTensor>* out) {
  const Value* arr = nullptr;
  WHARF_RETURN_IF_ERROR(r.member(method, field, key, Kind::kArray, true, &arr));
  std::set<std::string> names;
  for (size_t i = 0; i < arr->as_array().size(); ++i) {
    const Value& v = arr->as_array()[i];
    const std::string f = manifest_item(field + "." + key, i);
    if (!v.is_object()) return r.bad(f, "an object expected, got " + a_kind(v.kind()));
    PackageTensor t;
    WHARF_RETURN_IF_ERROR(r.name(v, f, "name", &t.name));
    if (!names.insert(t.name).second) return r.bad(f + ".name", quote_name(t.name) + " is given twice");
    WHARF_RETURN_IF_ERROR(r.dtype(v, f, &t.dtype));
    WHARF_RETURN_IF_ERROR(r.shape(v, f, dims, true, &t, nullptr));
    out->push_back(std::move(t));
  }
  return Status::Ok();
}

}  // namespace

bool package_dtype_from_name(std::string_view name, DType* out) {
  static const std::pair<const char*, DType> torch_names[] = {
      {"float32", DType::kF32},
      {"float16", DType::kF16},
      {"bfloat16", DType::kBF16},
      {"float64", DType::kF64},
      {"float8_e4m3fn", DType::kF8E4M3},
      {"float8_e5m2", DType::kF8E5M2},
      {"float8_e4m3fnuz", DType::kF8E4M3Fnuz},
      {"float8_e5m2fnuz", DType::kF8E5M2Fnuz},
      {"float8_e8m0fnu", DType::kF8E8M0},
      {"int8", DType::kI8},
      {"uint8", DType::kU8},
      {"int16", DType::kI16},
      {"int32", DType::kI32},
      {"int64", DType::kI64},
      {"uint16", DType::kU16},
      {"uint32", DType::kU32},
      {"uint64", DType::kU64},
      {"bool", DType::kBool},
      {"complex64", DType::kC64},
  };
  for (const auto& e : torch_names)
    if (name == e.first) {
      *out = e.second;
      return true;
    }
  const std::optional<DType> d = dtype_from_name(name);
  if (!d) return false;
  *out = *d;
  return true;
}

Status parse_manifest(std::string_view text, const std::string& where, Manifest* out) {
  *out = Manifest();
  Value root;
  {
    Status st = io::json::parse(text, &root);
    if (!st.ok()) return InvalidArgument(where + ": not JSON: " + st.message());
  }
  Reader r(where);
  if (!root.is_object()) return InvalidArgument(where + ": a JSON object expected, got " + a_kind(root.kind()));
  Manifest m;
  std::string format;
  WHARF_RETURN_IF_ERROR(r.string(root, "", "format", true, &format));
  if (format != "wharf-model-package") return r.bad("format", quote_name(format) + " is not \"wharf-model-package\"");
  const Value* v = nullptr;
  WHARF_RETURN_IF_ERROR(r.member(root, "", "format_version", Kind::kNumber, true, &v));
  WHARF_RETURN_IF_ERROR(r.uint(*v, "format_version", UINT64_MAX, &m.format_version));
  if (m.format_version > kModelPackageFormatVersion)
    return Unsupported(where + ": format_version " + std::to_string(m.format_version) +
                       " is newer than this loader reads (" + std::to_string(kModelPackageFormatVersion) +
                       "): use a newer Wharf");
  if (m.format_version == 0) return r.bad("format_version", "0 is not a format version (1 is the first)");
  WHARF_RETURN_IF_ERROR(r.name(root, "", "name", &m.name));
  WHARF_RETURN_IF_ERROR(r.member(root, "", "max_seq_len", Kind::kNumber, false, &v));
  if (v) WHARF_RETURN_IF_ERROR(r.uint(*v, "max_seq_len", uint64_t(INT64_MAX), &m.max_seq_len));

  // weights
  const Value* weights = nullptr;
  WHARF_RETURN_IF_ERROR(r.member(root, "", "weights", Kind::kObject, true, &weights));
  const Value* files = nullptr;
  WHARF_RETURN_IF_ERROR(r.member(*weights, "weights", "files", Kind::kArray, true, &files));
  std::set<std::string> seen_files;
  for (size_t i = 0; i < files->as_array().size(); ++i) {
    const Value& f = files->as_array()[i];
    const std::string field = manifest_item("weights.files", i);
    if (!f.is_string()) return r.bad(field, "a string expected, got " + a_kind(f.kind()));
    std::string p;
    WHARF_RETURN_IF_ERROR(r.normal_path(field, f.as_string(), &p));
    const std::string spelled =
        p == f.as_string() ? quote_path(p) : quote_path(f.as_string()) + " (that is " + quote_path(p) + ")";
    if (p.size() >= 5 && p.compare(p.size() - 5, 5, ".json") == 0)
      return r.bad(field, spelled + " is an index; list the safetensors files themselves");
    if (!seen_files.insert(p).second) {
      size_t first = 0;
      while (first < m.weight_files.size() && m.weight_files[first] != p) ++first;
      return r.bad(field, spelled + " is listed twice (as " + manifest_item("weights.files", first) + " too)");
    }
    m.weight_files.push_back(p);
  }
  const Value* params = nullptr;
  WHARF_RETURN_IF_ERROR(r.member(*weights, "weights", "parameters", Kind::kArray, true, &params));
  std::set<std::string> fqns;
  for (size_t i = 0; i < params->as_array().size(); ++i) {
    const Value& p = params->as_array()[i];
    const std::string field = manifest_item("weights.parameters", i);
    if (!p.is_object()) return r.bad(field, "an object expected, got " + a_kind(p.kind()));
    PackageParameter pp;
    WHARF_RETURN_IF_ERROR(r.name(p, field, "fqn", &pp.fqn));
    if (!fqns.insert(pp.fqn).second) return r.bad(field + ".fqn", quote_name(pp.fqn) + " is listed twice");
    WHARF_RETURN_IF_ERROR(r.fixed(p, field, &pp.dtype, &pp.shape));
    m.parameters.push_back(std::move(pp));
  }
  const Value* aliases = nullptr;
  WHARF_RETURN_IF_ERROR(r.member(*weights, "weights", "aliases", Kind::kObject, false, &aliases));
  if (aliases) {
    for (const auto& [alias, target] : aliases->as_object()) {
      const std::string field = Reader::key_field("weights.aliases", alias);
      if (!target.is_string()) return r.bad(field, "a string expected, got " + a_kind(target.kind()));
      if (Status st = check_fqn("alias", alias); !st.ok()) return r.bad(field, st.message());
      if (fqns.count(alias)) return r.bad(field, quote_name(alias) + " is a listed parameter, not another name of one");
      if (!fqns.count(target.as_string()))
        return r.bad(field, quote_name(target.as_string()) + " is not a listed parameter");
      m.aliases.emplace_back(alias, target.as_string());
    }
  }
  if (!m.parameters.empty() && m.weight_files.empty())
    return r.bad("weights.files", "empty, but weights.parameters lists " + std::to_string(m.parameters.size()));

  // state
  WHARF_RETURN_IF_ERROR(r.path(root, "", "state_file", false, &m.state_file));
  const Value* states = nullptr;
  WHARF_RETURN_IF_ERROR(r.member(root, "", "state", Kind::kArray, false, &states));
  if (states) {
    for (size_t i = 0; i < states->as_array().size(); ++i) {
      const Value& s = states->as_array()[i];
      const std::string field = manifest_item("state", i);
      if (!s.is_object()) return r.bad(field, "an object expected, got " + a_kind(s.kind()));
      PackageState ps;
      WHARF_RETURN_IF_ERROR(r.name(s, field, "fqn", &ps.fqn));
      if (!fqns.insert(ps.fqn).second)
        return r.bad(field + ".fqn", quote_name(ps.fqn) + " is declared twice (as a parameter or a state)");
      WHARF_RETURN_IF_ERROR(r.fixed(s, field, &ps.dtype, &ps.shape));
      const Value* init = s.find("initial");
      if (!init) return r.bad(field + ".initial", "missing (\"zeros\" or {\"tensor\": NAME})");
      if (init->is_string()) {
        if (init->as_string() != "zeros")
          return r.bad(field + ".initial", quote_name(init->as_string()) + " is not \"zeros\" or {\"tensor\": NAME}");
      } else if (init->is_object()) {
        WHARF_RETURN_IF_ERROR(r.name(*init, field + ".initial", "tensor", &ps.initial_tensor));
        if (m.state_file.empty())
          return r.bad(field + ".initial",
                       "names tensor " + quote_name(ps.initial_tensor) + " but the manifest has no state_file");
      } else {
        return r.bad(field + ".initial", "\"zeros\" or {\"tensor\": NAME} expected, got " + a_kind(init->kind()));
      }
      m.states.push_back(std::move(ps));
    }
  }

  // An alias is another name of a parameter: not a state's name either (states are read
  // after the aliases).
  for (const auto& [alias, target] : m.aliases)
    for (const PackageState& ps : m.states)
      if (ps.fqn == alias)
        return r.bad(Reader::key_field("weights.aliases", alias), quote_name(alias) + " is the name of a state");

  // methods
  const Value* methods = nullptr;
  WHARF_RETURN_IF_ERROR(r.member(root, "", "methods", Kind::kArray, true, &methods));
  if (methods->as_array().empty()) return r.bad("methods", "empty (at least one method)");
  std::set<std::string> method_names;
  for (size_t i = 0; i < methods->as_array().size(); ++i) {
    const Value& mv = methods->as_array()[i];
    const std::string field = manifest_item("methods", i);
    if (!mv.is_object()) return r.bad(field, "an object expected, got " + a_kind(mv.kind()));
    PackageMethod pm;
    WHARF_RETURN_IF_ERROR(r.name(mv, field, "name", &pm.name));
    if (!method_names.insert(pm.name).second) return r.bad(field + ".name", quote_name(pm.name) + " is given twice");
    WHARF_RETURN_IF_ERROR(r.path(mv, field, "file", true, &pm.file));
    const Value* dims = nullptr;
    WHARF_RETURN_IF_ERROR(r.member(mv, field, "dims", Kind::kObject, false, &dims));
    if (dims)
      for (const auto& d : dims->as_object()) {
        if (!d.second.is_object())
          return r.bad(field + ".dims",
                       quote_name(d.first) + ": an object {\"min\", \"max\"} expected, got " + a_kind(d.second.kind()));
        if (Status st = check_fqn("dimension name", d.first); !st.ok()) return r.bad(field + ".dims", st.message());
        // Its bounds, here (named with the method) and whether or not a shape uses it.
        for (const char* bound : {"min", "max"})
          if (const Value* b = d.second.find(bound)) {
            uint64_t u = 0;
            WHARF_RETURN_IF_ERROR(
                r.uint(*b, Reader::key_field(field + ".dims", d.first) + "." + bound, uint64_t(INT64_MAX), &u));
          }
        // "pad": how a run may be padded along the dimension (graph buckets). One rule is known;
        // any other is refused rather than ignored (a package asking for padding this loader
        // cannot do must not be padded another way).
        if (const Value* pad = d.second.find("pad")) {
          const std::string pf = Reader::key_field(field + ".dims", d.first) + ".pad";
          if (!pad->is_string()) return r.bad(pf, "a string expected, got " + a_kind(pad->kind()));
          if (pad->as_string() != "repeat")
            return r.bad(pf, quote_name(pad->as_string()) +
                                 " is not a padding rule this loader knows (\"repeat\": repeat the last row)");
          pm.repeat_dims.push_back(d.first);
        }
      }
    WHARF_RETURN_IF_ERROR(parse_tensors(r, mv, field, "inputs", dims, &pm.inputs));
    WHARF_RETURN_IF_ERROR(parse_tensors(r, mv, field, "outputs", dims, &pm.outputs));
    if (const Value* sc = mv.find("session_capacity")) {
      // A batched method: compiled over a state arena of S sessions, told its rows by "slots".
      uint64_t u = 0;
      WHARF_RETURN_IF_ERROR(r.uint(*sc, field + ".session_capacity", UINT32_MAX, &u));
      if (u == 0) return r.bad(field + ".session_capacity", "0 (a batched method's capacity is at least 1)");
      pm.session_capacity = uint32_t(u);
      for (size_t k = 0; k < pm.inputs.size(); ++k)
        if (pm.inputs[k].name == "slots") pm.slots_input = int(k);
      if (pm.slots_input < 0)
        return r.bad(field + ".inputs", "a batched method (session_capacity " + std::to_string(u) +
                                            ") has no input 'slots' (the slot indices of a run's sessions, int64 [N])");
      const PackageTensor& st = pm.inputs[size_t(pm.slots_input)];
      const std::string sf = manifest_item(field + ".inputs", size_t(pm.slots_input));
      if (st.dtype != DType::kI64 || st.shape.size() != 1)
        return r.bad(sf, "input 'slots' is " + std::string(dtype_name(st.dtype)) + " with " +
                             std::to_string(st.shape.size()) + " dimensions; the slot indices are int64 [N]");
    }
    for (auto* list : {&pm.inputs, &pm.outputs})
      for (PackageTensor& t : *list)
        for (size_t d = 0; d < t.shape.size(); ++d) {
          if (t.dim_max[d] >= 0 && t.dim_min[d] > t.dim_max[d])
            return r.bad(Reader::key_field(field + ".dims", t.dim_names[d]),
                         "min " + std::to_string(t.dim_min[d]) + " > max " + std::to_string(t.dim_max[d]));
          t.dim_name_c.push_back(t.dim_names[d].empty() ? nullptr : t.dim_names[d].c_str());
        }
    m.methods.push_back(std::move(pm));
  }
  *out = std::move(m);
  return Status::Ok();
}

}  // namespace wharf
