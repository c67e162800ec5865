/* kh._kh: the compiled call path of the kh Python package. Converts the Python arguments of an op
 * call (tensors of PyTorch, NumPy, CuPy or any DLPack producer; None, bool, int, float, str) into
 * kh_value arguments and calls kh_op_call, without a Python frame or a ctypes object per argument.
 *
 * Built against the CPython limited API of 3.11 (one abi3 build loads on 3.11, 3.12, ...). It links
 * nothing of kh: kh/__init__.py loads libkh with ctypes and hands this module the addresses of
 * kh_op_call and kh_last_error (_setup), so the module works with whichever libkh was loaded.
 *
 * Tensors, fastest first (the way is chosen once per Python type and cached):
 *   - types with DLPack's C exchange API (type(t).__dlpack_c_exchange_api__, a capsule named
 *     "dlpack_exchange_api"; PyTorch >= 2.10): dltensor_from_py_object_no_sync fills a borrowed
 *     DLTensor in C, and current_work_stream gives the producer's current stream (torch's
 *     current CUDA stream), with no Python call at all;
 *   - the buffer protocol (NumPy arrays, array.array, memoryview): a CPU DLTensor; an argument the
 *     op writes (Tensor(a!)) must be writable, read-only inputs are fine;
 *   - __dlpack__ / __dlpack_device__ (CuPy, JAX, ...): the capsule's DLTensor, the capsule held
 *     until the call returns; GPU producers get the call's stream (DLPack's stream rule);
 *   - anything else PyTorch-like (data_ptr(), shape, stride(), dtype, device) or with
 *     __array_interface__: described by kh._tensors.describe() in Python (the slow path).
 * The stream: stream= when given; else the current stream of the first GPU tensor's producer
 * (the exchange API's current_work_stream, else kh._tensors.current_stream_of()); else NULL. */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "kh/kh.h"

#define KH_MAX_ARGS 64
#define KH_DIMS_CAP 1024 /* int64 slots for the shapes and strides one call copies */

_Static_assert(sizeof(Py_ssize_t) == sizeof(int64_t), "Py_buffer shapes are read as int64_t");

/* ---- DLPack >= 1.0 structs this module reads (the system's dlpack.h may be 0.6) ---------------- */
typedef struct {
  uint32_t major, minor;
} kh_dlpack_version;

typedef struct kh_dl_managed_versioned {
  kh_dlpack_version version;
  void* manager_ctx;
  void (*deleter)(struct kh_dl_managed_versioned*);
  uint64_t flags;
  DLTensor dl_tensor;
} kh_dl_managed_versioned;
#define KH_DLPACK_FLAG_READ_ONLY 1ull

typedef struct kh_dlpack_exchange_api_header {
  kh_dlpack_version version;
  struct kh_dlpack_exchange_api_header* prev_api;
} kh_dlpack_exchange_api_header;

/* DLPack 1.2's DLPackExchangeAPI: the producer's C functions for speedy exchange. */
typedef struct {
  kh_dlpack_exchange_api_header header;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out);
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
} kh_dlpack_exchange_api;

/* ---- what kh/__init__.py hands over in _setup() ------------------------------------------------ */
typedef kh_status (*kh_op_call_fn)(const kh_op*, const kh_value*, uint32_t, void*);
typedef const char* (*kh_last_error_fn)(void);
static kh_op_call_fn g_op_call;
static kh_last_error_fn g_last_error;
static PyObject* g_error_type;      /* kh.Error(status, message) */
static PyObject* g_describe;        /* kh._tensors.describe(obj, writable, label) */
static PyObject* g_stream_of;       /* kh._tensors.current_stream_of(obj) */
static PyObject* g_integral;        /* numbers.Integral */
static PyObject* g_real;            /* numbers.Real */
static PyObject* g_str_stream;      /* interned "stream" */
static PyObject* g_str_dlpack;      /* "__dlpack__" */
static PyObject* g_str_dlpack_dev;  /* "__dlpack_device__" */

/* ---- the per-type cache of how an argument is converted ----------------------------------------- */
enum {
  KIND_UNKNOWN = 0,
  KIND_EXCHANGE, /* DLPack C exchange API */
  KIND_BUFFER,   /* buffer protocol */
  KIND_DLPACK,   /* __dlpack__ capsule */
  KIND_PYTHON,   /* kh._tensors.describe() */
  KIND_BOOL,     /* numpy.bool_ and the like */
  KIND_INDEX,    /* numbers.Integral */
  KIND_REAL,     /* numbers.Real */
  KIND_STR       /* a str subclass */
};

typedef struct {
  PyObject* type; /* a strong reference, so the address is never reused */
  int kind;
  const kh_dlpack_exchange_api* api;
} type_entry;

#define KH_TYPE_CACHE 32
static type_entry g_types[KH_TYPE_CACHE];
static int g_ntypes;

/* ---- one call's converted arguments ------------------------------------------------------------- */
typedef struct {
  kh_value values[KH_MAX_ARGS];
  DLTensor tensors[KH_MAX_ARGS];
  Py_buffer buffers[KH_MAX_ARGS];
  PyObject* refs[KH_MAX_ARGS]; /* capsules and described tuples held for the call */
  int64_t dims[KH_DIMS_CAP];
  int nargs, nbuffers, nrefs, ndims;
  void* stream;
  int stream_known;
  int64_t largest; /* elements of the largest tensor (whether a CPU call lets the GIL go) */
} frame;

static void frame_init(frame* f) {
  f->nargs = f->nbuffers = f->nrefs = f->ndims = 0;
  f->stream = NULL;
  f->stream_known = 0;
  f->largest = 0;
}

static void frame_clear(frame* f) {
  for (int i = 0; i < f->nbuffers; ++i) PyBuffer_Release(&f->buffers[i]);
  for (int i = 0; i < f->nrefs; ++i) Py_DECREF(f->refs[i]);
  f->nbuffers = f->nrefs = 0;
}

/* ---- OpCaller: the base type of kh.Op ----------------------------------------------------------- */
typedef struct {
  PyObject_HEAD
  const kh_op* handle; /* NULL once the kernel package is released */
  PyObject* name;      /* str */
  PyObject* arg_names; /* tuple of str, schema order */
  uint64_t written;    /* bit i: the op writes argument i (Tensor(a!)) */
  int device_type;     /* DLDeviceType of the package's build */
} op_caller;

static PyObject* g_bound_type;

static PyObject* arg_label(op_caller* op, int i) {
  PyObject* name = NULL;
  if (op->arg_names && i < PyTuple_Size(op->arg_names)) name = PyTuple_GetItem(op->arg_names, i);
  if (name) return PyUnicode_FromFormat("%U: argument %d '%U'", op->name, i, name);
  PyErr_Clear();
  return PyUnicode_FromFormat("%U: argument %d", op->name, i);
}

/* Raises exc_type("kh: <op>: argument <i> '<name>'<message>"): messages start with ": " or " is";
 * a pending exception's text, if any, is added in parentheses. */
static void fail_arg(op_caller* op, int i, PyObject* exc_type, const char* format, ...) {
  PyObject *type = NULL, *value = NULL, *tb = NULL;
  PyErr_Fetch(&type, &value, &tb);
  va_list ap;
  va_start(ap, format);
  PyObject* message = PyUnicode_FromFormatV(format, ap);
  va_end(ap);
  PyObject* label = arg_label(op, i);
  PyObject* detail = value ? PyObject_Str(value) : NULL;
  if (label && message) {
    if (detail)
      PyErr_Format(exc_type, "kh: %U%U (%U)", label, message, detail);
    else
      PyErr_Format(exc_type, "kh: %U%U", label, message);
  }
  Py_XDECREF(message);
  Py_XDECREF(label);
  Py_XDECREF(detail);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
}

static void raise_error(kh_status status, PyObject* message /* stolen */) {
  if (!message) return;
  PyObject* exc = PyObject_CallFunction(g_error_type, "iO", (int)status, message);
  Py_DECREF(message);
  if (exc) {
    PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
}

static void raise_status(kh_status status) {
  const char* message = g_last_error ? g_last_error() : NULL;
  if (!message) message = "";
  raise_error(status, PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace"));
}

/* *slot = a new reference to value, the old one released. */
static void replace_ref(PyObject** slot, PyObject* value) {
  PyObject* old = *slot;
  Py_XINCREF(value);
  *slot = value;
  Py_XDECREF(old);
}

static int is_gpu(int device_type) { return device_type == 2 || device_type == 10 || device_type == 13; }

/* ---- classification -------------------------------------------------------------------------- */
static const kh_dlpack_exchange_api* exchange_api_of(PyObject* type) {
  static const char* const names[] = {"__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"};
  for (int n = 0; n < 2; ++n) {
    PyObject* o = PyObject_GetAttrString(type, names[n]);
    if (!o) {
      PyErr_Clear();
      continue;
    }
    void* p = NULL;
    if (PyCapsule_CheckExact(o))
      p = PyCapsule_GetPointer(o, "dlpack_exchange_api");
    else if (PyLong_Check(o))
      p = PyLong_AsVoidPtr(o);
    Py_DECREF(o);
    if (!p) {
      PyErr_Clear();
      continue;
    }
    const kh_dlpack_exchange_api* api = (const kh_dlpack_exchange_api*)p;
    if (api->header.version.major == 1 && api->dltensor_from_py_object_no_sync) return api;
  }
  return NULL;
}

static int has_attr(PyObject* o, const char* name) {
  PyObject* a = PyObject_GetAttrString(o, name);
  if (!a) {
    PyErr_Clear();
    return 0;
  }
  Py_DECREF(a);
  return 1;
}

static int is_instance(PyObject* o, PyObject* cls) {
  int r = cls ? PyObject_IsInstance(o, cls) : 0;
  if (r < 0) {
    PyErr_Clear();
    r = 0;
  }
  return r;
}

/* How `a` (not None, bool, int, float or str exactly) is converted; *api for KIND_EXCHANGE. */
static int classify(PyObject* a, const kh_dlpack_exchange_api** api) {
  PyObject* type = (PyObject*)Py_TYPE(a);
  for (int i = 0; i < g_ntypes; ++i)
    if (g_types[i].type == type) {
      *api = g_types[i].api;
      return g_types[i].kind;
    }
  int kind = KIND_UNKNOWN, cache = 1;
  *api = NULL;
  PyObject* tname = PyType_GetName((PyTypeObject*)type);
  const char* tn = tname ? PyUnicode_AsUTF8AndSize(tname, NULL) : NULL;
  if (!tn) PyErr_Clear();
  if (tn && (strcmp(tn, "bool_") == 0 || strcmp(tn, "bool") == 0))
    kind = KIND_BOOL;
  else if (is_instance(a, g_integral))
    kind = KIND_INDEX;
  else if (is_instance(a, g_real))
    kind = KIND_REAL;
  else if (PyUnicode_Check(a))
    kind = KIND_STR;
  else if ((*api = exchange_api_of(type)) != NULL)
    kind = KIND_EXCHANGE;
  else if (has_attr(a, "data_ptr") && has_attr(a, "stride") && has_attr(a, "dtype") && has_attr(a, "device"))
    kind = KIND_PYTHON, cache = 0;
  else if (PyObject_CheckBuffer(a))
    kind = KIND_BUFFER;
  else if (has_attr(a, "__array_interface__"))
    kind = KIND_PYTHON, cache = 0;
  else if (has_attr(a, "__dlpack__"))
    kind = KIND_DLPACK;
  Py_XDECREF(tname);
  if (kind != KIND_UNKNOWN && cache && g_ntypes < KH_TYPE_CACHE) {
    Py_INCREF(type);
    g_types[g_ntypes].type = type;
    g_types[g_ntypes].kind = kind;
    g_types[g_ntypes].api = *api;
    ++g_ntypes;
  }
  return kind;
}

/* ---- streams --------------------------------------------------------------------------------- */
/* A cudaStream_t/hipStream_t from an int or an object with .cuda_stream, .ptr or .value. */
static int stream_from_object(PyObject* s, void** out) {
  if (PyLong_Check(s)) {
    *out = PyLong_AsVoidPtr(s);
    return PyErr_Occurred() ? -1 : 0;
  }
  static const char* const attrs[] = {"cuda_stream", "ptr", "value"};
  for (int n = 0; n < 3; ++n) {
    PyObject* v = PyObject_GetAttrString(s, attrs[n]);
    if (!v) {
      PyErr_Clear();
      continue;
    }
    if (v == Py_None) {
      *out = NULL;
    } else {
      *out = PyLong_AsVoidPtr(v);
    }
    Py_DECREF(v);
    return PyErr_Occurred() ? -1 : 0;
  }
  PyObject* tname = PyType_GetName(Py_TYPE(s));
  if (tname) {
    PyErr_Format(PyExc_TypeError, "kh: cannot use %U as a stream (an int or an object with .cuda_stream)", tname);
    Py_DECREF(tname);
  }
  return -1;
}

/* The current stream of the producer of GPU tensor `a` (kind/api as classified). */
static int resolve_stream(frame* f, PyObject* a, int kind, const kh_dlpack_exchange_api* api, int device_type,
                          int device_id) {
  if (f->stream_known) return 0;
  f->stream_known = 1;
  if (kind == KIND_EXCHANGE && api->current_work_stream) {
    void* s = NULL;
    if (api->current_work_stream(device_type, device_id, &s) == 0) {
      f->stream = s;
      return 0;
    }
    if (PyErr_Occurred()) return -1;
  }
  PyObject* r = PyObject_CallFunctionObjArgs(g_stream_of, a, NULL);
  if (!r) return -1;
  if (r != Py_None) f->stream = PyLong_AsVoidPtr(r);
  Py_DECREF(r);
  return PyErr_Occurred() ? -1 : 0;
}

/* ---- tensors --------------------------------------------------------------------------------- */
static int64_t* take_dims(frame* f, int n) {
  if (f->ndims + n > KH_DIMS_CAP) return NULL;
  int64_t* p = f->dims + f->ndims;
  f->ndims += n;
  return p;
}

static void note_size(frame* f, const DLTensor* t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
  if (n > f->largest) f->largest = n;
}

/* struct-module format of a buffer -> DLPack dtype (code, bits); -1 when there is none. */
static int buffer_dtype(const char* fmt, Py_ssize_t itemsize, DLDataType* dt) {
  if (!fmt) fmt = "B";
  if (*fmt == '@' || *fmt == '=' || *fmt == '<') ++fmt;
  if (fmt[0] == '\0' || fmt[1] != '\0') return -1;
  uint8_t code;
  switch (fmt[0]) {
    case 'e': case 'f': case 'd': code = kDLFloat; break;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': code = kDLInt; break;
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': code = kDLUInt; break;
    case '?': code = 6; /* kDLBool */ break;
    default: return -1;
  }
  dt->code = code;
  dt->bits = (uint8_t)(8 * itemsize);
  dt->lanes = 1;
  return 0;
}

static int tensor_from_buffer(op_caller* op, frame* f, int i, PyObject* a, int written, DLTensor* t) {
  Py_buffer* b = &f->buffers[f->nbuffers];
  int flags = PyBUF_STRIDES | PyBUF_FORMAT;
  if (PyObject_GetBuffer(a, b, flags | (written ? PyBUF_WRITABLE : 0)) < 0) {
    if (written && PyObject_GetBuffer(a, b, flags) == 0) {
      PyBuffer_Release(b);
      PyErr_Clear();
      fail_arg(op, i, PyExc_TypeError, " is read-only, but the op writes it: pass a writable array");
      return -1;
    }
    fail_arg(op, i, PyExc_TypeError, ": its buffer cannot be read");
    return -1;
  }
  ++f->nbuffers;
  if (buffer_dtype(b->format, b->itemsize, &t->dtype) < 0) {
    fail_arg(op, i, PyExc_TypeError, ": buffer format '%s' has no DLPack dtype here (little-endian numbers and bool only)",
             b->format ? b->format : "B");
    return -1;
  }
  t->data = b->buf;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = b->ndim;
  t->byte_offset = 0;
  t->shape = (int64_t*)b->shape;
  t->strides = NULL;
  if (b->ndim > 0 && b->strides) {
    int64_t* st = take_dims(f, b->ndim);
    if (!st) {
      fail_arg(op, i, PyExc_ValueError, ": too many dimensions in one call");
      return -1;
    }
    for (int d = 0; d < b->ndim; ++d) {
      if (b->strides[d] % b->itemsize != 0) {
        fail_arg(op, i, PyExc_TypeError, ": strides are not whole elements");
        return -1;
      }
      st[d] = b->strides[d] / b->itemsize;
    }
    t->strides = st;
  }
  return 0;
}

static int tensor_from_dlpack(op_caller* op, frame* f, int i, PyObject* a, int written, DLTensor* t) {
  PyObject* dev = PyObject_CallMethodObjArgs(a, g_str_dlpack_dev, NULL);
  if (!dev) {
    fail_arg(op, i, PyExc_TypeError, ": __dlpack_device__() failed");
    return -1;
  }
  int dev_type = 0, dev_id = 0;
  if (!PyArg_ParseTuple(dev, "ii", &dev_type, &dev_id)) {
    Py_DECREF(dev);
    fail_arg(op, i, PyExc_TypeError, ": __dlpack_device__() did not return (device_type, device_id)");
    return -1;
  }
  Py_DECREF(dev);
  PyObject* capsule = NULL;
  if (is_gpu(dev_type)) {
    if (resolve_stream(f, a, KIND_DLPACK, NULL, dev_type, dev_id) < 0) return -1;
    /* The producer makes its pending work visible to the call's stream (DLPack's stream rule;
     * 1 is CUDA's legacy default stream, which NULL means to kh). */
    PyObject* s = PyLong_FromVoidPtr(f->stream ? f->stream : (void*)1);
    PyObject* args = PyTuple_New(0);
    PyObject* kw = Py_BuildValue("{s:N}", "stream", s);
    PyObject* method = PyObject_GetAttr(a, g_str_dlpack);
    if (method && args && kw) capsule = PyObject_Call(method, args, kw);
    Py_XDECREF(method);
    Py_XDECREF(args);
    Py_XDECREF(kw);
  } else {
    capsule = PyObject_CallMethodObjArgs(a, g_str_dlpack, NULL);
  }
  if (!capsule) {
    fail_arg(op, i, PyExc_TypeError, ": __dlpack__() failed");
    return -1;
  }
  f->refs[f->nrefs++] = capsule; /* an unconsumed capsule frees its tensor when it goes */
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    DLManagedTensor* m = (DLManagedTensor*)PyCapsule_GetPointer(capsule, "dltensor");
    *t = m->dl_tensor;
  } else if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    kh_dl_managed_versioned* m = (kh_dl_managed_versioned*)PyCapsule_GetPointer(capsule, "dltensor_versioned");
    if (m->version.major != 1) {
      fail_arg(op, i, PyExc_TypeError, ": its DLPack capsule has a major version other than 1");
      return -1;
    }
    if (written && (m->flags & KH_DLPACK_FLAG_READ_ONLY)) {
      fail_arg(op, i, PyExc_TypeError, " is read-only, but the op writes it: pass a writable array");
      return -1;
    }
    *t = m->dl_tensor;
  } else {
    fail_arg(op, i, PyExc_TypeError, ": __dlpack__() returned no DLPack capsule");
    return -1;
  }
  return 0;
}

/* kh._tensors.describe(obj, writable, label) -> (data, device_type, device_id, code, bits, lanes,
 * shape, strides or None, byte_offset, keep) */
static int tensor_from_python(op_caller* op, frame* f, int i, PyObject* a, int written, DLTensor* t) {
  PyObject* label = arg_label(op, i);
  if (!label) return -1;
  PyObject* d = PyObject_CallFunction(g_describe, "OOO", a, written ? Py_True : Py_False, label);
  Py_DECREF(label);
  if (!d) return -1;
  f->refs[f->nrefs++] = d;
  PyObject *data, *shape, *strides, *keep;
  int dev_type, dev_id, code, bits, lanes;
  unsigned long long offset;
  if (!PyArg_ParseTuple(d, "OiiiiiOOKO", &data, &dev_type, &dev_id, &code, &bits, &lanes, &shape, &strides, &offset,
                        &keep))
    return -1;
  t->data = PyLong_AsVoidPtr(data);
  if (PyErr_Occurred()) return -1;
  t->device.device_type = dev_type;
  t->device.device_id = dev_id;
  t->dtype.code = (uint8_t)code;
  t->dtype.bits = (uint8_t)bits;
  t->dtype.lanes = (uint16_t)lanes;
  t->byte_offset = offset;
  Py_ssize_t nd = PyTuple_Size(shape);
  if (nd < 0) return -1;
  t->ndim = (int32_t)nd;
  t->shape = take_dims(f, (int)nd);
  t->strides = NULL;
  if (!t->shape) {
    fail_arg(op, i, PyExc_ValueError, ": too many dimensions in one call");
    return -1;
  }
  for (Py_ssize_t k = 0; k < nd; ++k) t->shape[k] = PyLong_AsLongLong(PyTuple_GetItem(shape, k));
  if (strides != Py_None) {
    t->strides = take_dims(f, (int)nd);
    if (!t->strides) {
      fail_arg(op, i, PyExc_ValueError, ": too many dimensions in one call");
      return -1;
    }
    for (Py_ssize_t k = 0; k < nd; ++k) t->strides[k] = PyLong_AsLongLong(PyTuple_GetItem(strides, k));
  }
  if (PyErr_Occurred()) return -1;
  if (is_gpu(dev_type) && resolve_stream(f, a, KIND_PYTHON, NULL, dev_type, dev_id) < 0) return -1;
  return 0;
}

/* ---- one argument ------------------------------------------------------------------------------ */
static int string_value(kh_value* v, PyObject* a) {
  v->kind = KH_VALUE_STRING;
  v->u.s = PyUnicode_AsUTF8AndSize(a, NULL); /* lives as long as `a`, which the call's arguments hold */
  return v->u.s ? 0 : -1;
}

static int convert(op_caller* op, frame* f, int i, PyObject* a) {
  kh_value* v = &f->values[i];
  v->reserved = 0;
  if (a == Py_None) {
    v->kind = KH_VALUE_NONE;
    v->u.i = 0;
    return 0;
  }
  PyTypeObject* type = Py_TYPE(a);
  if (type == &PyBool_Type) {
    v->kind = KH_VALUE_BOOL;
    v->u.b = a == Py_True;
    return 0;
  }
  if (type == &PyFloat_Type) {
    v->kind = KH_VALUE_DOUBLE;
    v->u.d = PyFloat_AsDouble(a);
    return 0;
  }
  if (type == &PyLong_Type) {
    v->kind = KH_VALUE_INT;
    v->u.i = PyLong_AsLongLong(a);
    if (v->u.i == -1 && PyErr_Occurred()) {
      fail_arg(op, i, PyExc_OverflowError, ": does not fit a 64-bit int");
      return -1;
    }
    return 0;
  }
  if (type == &PyUnicode_Type) return string_value(v, a);
  const kh_dlpack_exchange_api* api = NULL;
  const int kind = classify(a, &api);
  const int written = i < 64 && ((op->written >> i) & 1u);
  DLTensor* t = &f->tensors[i];
  switch (kind) {
    case KIND_EXCHANGE:
      if (api->dltensor_from_py_object_no_sync(a, t) != 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the producer's DLPack exchange failed");
        fail_arg(op, i, PyExc_TypeError, ": cannot be passed as a DLPack tensor");
        return -1;
      }
      if (is_gpu(t->device.device_type) &&
          resolve_stream(f, a, kind, api, t->device.device_type, t->device.device_id) < 0)
        return -1;
      break;
    case KIND_BUFFER:
      if (tensor_from_buffer(op, f, i, a, written, t) < 0) return -1;
      break;
    case KIND_DLPACK:
      if (tensor_from_dlpack(op, f, i, a, written, t) < 0) return -1;
      break;
    case KIND_PYTHON:
      if (tensor_from_python(op, f, i, a, written, t) < 0) return -1;
      break;
    case KIND_BOOL: {
      const int truth = PyObject_IsTrue(a);
      if (truth < 0) return -1;
      v->kind = KH_VALUE_BOOL;
      v->u.b = truth;
      return 0;
    }
    case KIND_INDEX: {
      PyObject* n = PyNumber_Index(a);
      if (!n) return -1;
      v->kind = KH_VALUE_INT;
      v->u.i = PyLong_AsLongLong(n);
      Py_DECREF(n);
      if (v->u.i == -1 && PyErr_Occurred()) {
        fail_arg(op, i, PyExc_OverflowError, ": does not fit a 64-bit int");
        return -1;
      }
      return 0;
    }
    case KIND_REAL:
      v->kind = KH_VALUE_DOUBLE;
      v->u.d = PyFloat_AsDouble(a);
      return PyErr_Occurred() ? -1 : 0;
    case KIND_STR:
      return string_value(v, a);
    default: {
      PyObject* tname = PyType_GetName(type);
      if (tname) {
        fail_arg(op, i, PyExc_TypeError, ": cannot pass %U to an op (tensors, None, bool, int, float and str are understood)",
                 tname);
        Py_DECREF(tname);
      }
      return -1;
    }
  }
  v->kind = KH_VALUE_TENSOR;
  v->u.tensor = t;
  if (op->device_type == kDLCPU) note_size(f, t);
  return 0;
}

static int fill(op_caller* op, frame* f, PyObject* args, PyObject* kwargs) {
  if (kwargs && PyDict_Size(kwargs) > 0) {
    PyObject* s = PyDict_GetItemWithError(kwargs, g_str_stream);
    if (!s && PyErr_Occurred()) return -1;
    if (PyDict_Size(kwargs) != (s ? 1 : 0)) {
      PyErr_SetString(PyExc_TypeError, "kh: an op call takes its arguments by position, and stream= only");
      return -1;
    }
    if (s && s != Py_None) {
      if (stream_from_object(s, &f->stream) < 0) return -1;
      f->stream_known = 1;
    }
  }
  const Py_ssize_t n = PyTuple_Size(args);
  if (n > KH_MAX_ARGS) {
    PyErr_Format(PyExc_TypeError, "kh: %U: %zd arguments, more than the %d a call takes", op->name, n, KH_MAX_ARGS);
    return -1;
  }
  f->nargs = (int)n;
  for (Py_ssize_t i = 0; i < n; ++i)
    if (convert(op, f, (int)i, PyTuple_GetItem(args, i)) < 0) return -1;
  return 0;
}

/* CPU kernels let other threads run while they work on more than this many elements. */
#define KH_GIL_RELEASE_ELEMENTS 32768

static kh_status call_op(const kh_op* handle, frame* f, int release_gil) {
  kh_status status;
  if (release_gil) {
    Py_BEGIN_ALLOW_THREADS
    status = g_op_call(handle, f->values, (uint32_t)f->nargs, f->stream);
    Py_END_ALLOW_THREADS
  } else {
    status = g_op_call(handle, f->values, (uint32_t)f->nargs, f->stream);
  }
  return status;
}

static int check_live(op_caller* op) {
  if (op->handle) return 0;
  raise_error(KH_ERROR_INVALID_ARGUMENT, PyUnicode_FromFormat("%U: its kernel package was released", op->name));
  return -1;
}

static PyObject* op_caller_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  op_caller* op = (op_caller*)self;
  if (!g_op_call) {
    PyErr_SetString(PyExc_RuntimeError, "kh._kh: _setup() was not called");
    return NULL;
  }
  if (check_live(op) < 0) return NULL;
  frame f;
  frame_init(&f);
  if (fill(op, &f, args, kwargs) < 0) {
    frame_clear(&f);
    return NULL;
  }
  const kh_status status = call_op(op->handle, &f, op->device_type == kDLCPU && f.largest > KH_GIL_RELEASE_ELEMENTS);
  frame_clear(&f);
  if (status != KH_OK) {
    raise_status(status);
    return NULL;
  }
  Py_RETURN_NONE;
}

/* OpCaller._setup(handle, name, arg_names, written, device_type) */
static PyObject* op_caller_setup(PyObject* self, PyObject* args) {
  op_caller* op = (op_caller*)self;
  PyObject *handle, *name, *arg_names, *written;
  int device_type;
  if (!PyArg_ParseTuple(args, "OUO!Oi", &handle, &name, &PyTuple_Type, &arg_names, &written, &device_type)) return NULL;
  void* h = PyLong_AsVoidPtr(handle);
  if (PyErr_Occurred()) return NULL;
  uint64_t mask = 0;
  PyObject* seq = PySequence_Tuple(written);
  if (!seq) return NULL;
  for (Py_ssize_t i = 0; i < PyTuple_Size(seq) && i < 64; ++i) {
    const int w = PyObject_IsTrue(PyTuple_GetItem(seq, i));
    if (w < 0) {
      Py_DECREF(seq);
      return NULL;
    }
    if (w) mask |= 1ull << i;
  }
  Py_DECREF(seq);
  op->handle = (const kh_op*)h;
  replace_ref(&op->name, name);
  replace_ref(&op->arg_names, arg_names);
  op->written = mask;
  op->device_type = device_type;
  Py_RETURN_NONE;
}

static PyObject* op_caller_release(PyObject* self, PyObject* unused) {
  (void)unused;
  ((op_caller*)self)->handle = NULL;
  Py_RETURN_NONE;
}

typedef struct {
  PyObject_HEAD
  op_caller* op;
  PyObject* args;
  frame* f;
  int release_gil;
} bound_call;

/* OpCaller.bind(*args, stream=None) -> BoundCall */
static PyObject* op_caller_bind(PyObject* self, PyObject* args, PyObject* kwargs) {
  op_caller* op = (op_caller*)self;
  if (check_live(op) < 0) return NULL;
  frame* f = (frame*)PyMem_Malloc(sizeof(frame));
  if (!f) return PyErr_NoMemory();
  frame_init(f);
  if (fill(op, f, args, kwargs) < 0) {
    frame_clear(f);
    PyMem_Free(f);
    return NULL;
  }
  /* Tensors and strings point into this frame and into the argument objects: both stay with the call. */
  bound_call* b = PyObject_New(bound_call, (PyTypeObject*)g_bound_type);
  if (!b) {
    frame_clear(f);
    PyMem_Free(f);
    return NULL;
  }
  Py_INCREF(self);
  b->op = op;
  Py_INCREF(args);
  b->args = args;
  b->f = f;
  b->release_gil = op->device_type == kDLCPU && f->largest > KH_GIL_RELEASE_ELEMENTS;
  return (PyObject*)b;
}

static void op_caller_dealloc(PyObject* self) {
  op_caller* op = (op_caller*)self;
  PyTypeObject* type = Py_TYPE(self);
  Py_CLEAR(op->name);
  Py_CLEAR(op->arg_names);
  freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
  tp_free(self);
  Py_DECREF(type);
}

static PyMethodDef op_caller_methods[] = {
    {"_setup", op_caller_setup, METH_VARARGS,
     "_setup(handle, name, arg_names, written, device_type): the kh_op* (int), its name, its argument names, "
     "which arguments it writes, and the DLDeviceType of its build."},
    {"_release", op_caller_release, METH_NOARGS, "Marks the op unusable (its kernel package was released)."},
    {"bind", (PyCFunction)(void (*)(void))op_caller_bind, METH_VARARGS | METH_KEYWORDS,
     "bind(*args, stream=None) -> BoundCall: the arguments converted once; calling it repeats kh_op_call."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot op_caller_slots[] = {
    {Py_tp_doc, (void*)"The compiled call path of a kh op: call it with the schema's arguments (stream= optional)."},
    {Py_tp_new, (void*)PyType_GenericNew},
    {Py_tp_dealloc, (void*)op_caller_dealloc},
    {Py_tp_call, (void*)op_caller_call},
    {Py_tp_methods, op_caller_methods},
    {0, NULL},
};

static PyType_Spec op_caller_spec = {
    "kh._kh.OpCaller", sizeof(op_caller), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, op_caller_slots,
};

/* ---- BoundCall ------------------------------------------------------------------------------- */
static PyObject* bound_call_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  bound_call* b = (bound_call*)self;
  if ((args && PyTuple_Size(args) > 0) || (kwargs && PyDict_Size(kwargs) > 0)) {
    PyErr_SetString(PyExc_TypeError, "kh: a BoundCall takes no arguments (they were bound by Op.bind)");
    return NULL;
  }
  if (check_live(b->op) < 0) return NULL;
  const kh_status status = call_op(b->op->handle, b->f, b->release_gil);
  if (status != KH_OK) {
    raise_status(status);
    return NULL;
  }
  Py_RETURN_NONE;
}

static void bound_call_dealloc(PyObject* self) {
  bound_call* b = (bound_call*)self;
  PyTypeObject* type = Py_TYPE(self);
  if (b->f) {
    frame_clear(b->f);
    PyMem_Free(b->f);
  }
  Py_XDECREF(b->args);
  Py_XDECREF((PyObject*)b->op);
  PyObject_Free(self);
  Py_DECREF(type);
}

static PyObject* bound_call_repr(PyObject* self) {
  bound_call* b = (bound_call*)self;
  return PyUnicode_FromFormat("<kh.BoundCall %U, %d arguments>", b->op->name, b->f->nargs);
}

static PyType_Slot bound_call_slots[] = {
    {Py_tp_doc, (void*)"Op.bind()'s result: calling it runs kh_op_call again on the bound arguments and stream."},
    {Py_tp_dealloc, (void*)bound_call_dealloc},
    {Py_tp_call, (void*)bound_call_call},
    {Py_tp_repr, (void*)bound_call_repr},
    {0, NULL},
};

static PyType_Spec bound_call_spec = {"kh._kh.BoundCall", sizeof(bound_call), 0, Py_TPFLAGS_DEFAULT, bound_call_slots};

/* ---- module ------------------------------------------------------------------------------------ */
/* _setup(op_call_address, last_error_address, error_type, describe, current_stream_of) */
static PyObject* module_setup(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *call_addr, *error_addr, *error_type, *describe, *stream_of;
  if (!PyArg_ParseTuple(args, "OOOOO", &call_addr, &error_addr, &error_type, &describe, &stream_of)) return NULL;
  void* call = PyLong_AsVoidPtr(call_addr);
  void* last = PyLong_AsVoidPtr(error_addr);
  if (PyErr_Occurred()) return NULL;
  if (!call || !last) {
    PyErr_SetString(PyExc_ValueError, "kh._kh._setup: NULL function address");
    return NULL;
  }
  PyObject* numbers = PyImport_ImportModule("numbers");
  if (!numbers) return NULL;
  PyObject* integral = PyObject_GetAttrString(numbers, "Integral");
  PyObject* real = PyObject_GetAttrString(numbers, "Real");
  Py_DECREF(numbers);
  if (!integral || !real) {
    Py_XDECREF(integral);
    Py_XDECREF(real);
    return NULL;
  }
  *(void**)(&g_op_call) = call;
  *(void**)(&g_last_error) = last;
  replace_ref(&g_integral, integral);
  replace_ref(&g_real, real);
  Py_DECREF(integral);
  Py_DECREF(real);
  replace_ref(&g_error_type, error_type);
  replace_ref(&g_describe, describe);
  replace_ref(&g_stream_of, stream_of);
  Py_RETURN_NONE;
}

/* _type_kinds() -> [(type, kind name)]: what the per-type cache holds (for tests and docs). */
static PyObject* module_type_kinds(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  static const char* const names[] = {"unknown", "dlpack-c-exchange", "buffer", "dlpack", "python",
                                      "bool",    "int",               "float",  "str"};
  PyObject* out = PyList_New(0);
  for (int i = 0; out && i < g_ntypes; ++i) {
    PyObject* item = Py_BuildValue("(Os)", g_types[i].type, names[g_types[i].kind]);
    if (!item || PyList_Append(out, item) < 0) {
      Py_XDECREF(item);
      Py_DECREF(out);
      return NULL;
    }
    Py_DECREF(item);
  }
  return out;
}

static PyMethodDef module_methods[] = {
    {"_setup", module_setup, METH_VARARGS,
     "_setup(kh_op_call address, kh_last_error address, Error type, describe, current_stream_of)"},
    {"_type_kinds", module_type_kinds, METH_NOARGS, "[(type, how its arguments are converted)] seen so far"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kh._kh", "The compiled call path of kh (see python/src/_kh.c).", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kh(void) {
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return NULL;
  g_str_stream = PyUnicode_InternFromString("stream");
  g_str_dlpack = PyUnicode_InternFromString("__dlpack__");
  g_str_dlpack_dev = PyUnicode_InternFromString("__dlpack_device__");
  PyObject* op_type = PyType_FromSpec(&op_caller_spec);
  g_bound_type = PyType_FromSpec(&bound_call_spec);
  if (!g_str_stream || !g_str_dlpack || !g_str_dlpack_dev || !op_type || !g_bound_type ||
      PyModule_AddObject(m, "OpCaller", op_type) < 0) {
    Py_XDECREF(op_type);
    Py_DECREF(m);
    return NULL;
  }
  Py_INCREF(g_bound_type);
  if (PyModule_AddObject(m, "BoundCall", g_bound_type) < 0) {
    Py_DECREF(g_bound_type);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
