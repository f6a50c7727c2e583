/*===- capi-test.c - Use uq from C -----------------------------------------===*\
|*                                                                            *|
|* Exercises libUQCAPI.so from a C program: dialect registration through the  *|
|* upstream handle mechanism, parsing and verifying a uq module with the core *|
|* MLIR C API, running a pipeline, compiling, and the error paths. Each part  *|
|* prints a labelled line that capi.test checks.                              *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "uq-c/Compiler.h"
#include "uq-c/Dialects.h"

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kModule =
    "func.func @rotate(%x: tensor<4x128xf32>) -> tensor<4x128xf32> {\n"
    "  %r = uq.rotate %x : tensor<4x128xf32>\n"
    "  %unused = uq.rotate %x : tensor<4x128xf32>\n"
    "  return %r : tensor<4x128xf32>\n"
    "}\n";

/* The verifier rejects a rotation over 96 columns (not a power of two). */
static const char *kBadModule =
    "func.func @bad(%x: tensor<4x96xf32>) -> tensor<4x96xf32> {\n"
    "  %r = uq.rotate %x : tensor<4x96xf32>\n"
    "  return %r : tensor<4x96xf32>\n"
    "}\n";

static void printCallback(MlirStringRef str, void *userData) {
  fwrite(str.data, 1, str.length, (FILE *)userData);
}

/* Registration + the core C API: parse, verify and print a uq module. */
static int testParse(void) {
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  uqRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);

  /* The uq dialect handle alone, as for any upstream dialect. */
  MlirDialectHandle uq = mlirGetDialectHandle__uq__();
  MlirStringRef ns = mlirDialectHandleGetNamespace(uq);
  MlirDialect dialect = mlirDialectHandleLoadDialect(uq, ctx);
  fprintf(stdout, "parse: handle namespace '%.*s', loaded %d\n",
          (int)ns.length, ns.data, !mlirDialectIsNull(dialect));

  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kModule));
  if (mlirModuleIsNull(module)) {
    fprintf(stdout, "parse: FAILED\n");
    mlirContextDestroy(ctx);
    return 1;
  }
  MlirOperation op = mlirModuleGetOperation(module);
  fprintf(stdout, "parse: verify %d\n", mlirOperationVerify(op));
  mlirOperationPrint(op, printCallback, stdout);
  fprintf(stdout, "\n");
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return 0;
}

/* uqRunPipeline: a pipeline of upstream passes on uq IR. */
static int testRunPipeline(void) {
  uqRegisterAllPasses();
  UqBuffer out, diag;
  MlirLogicalResult r =
      uqRunPipeline(kModule, strlen(kModule),
                    "builtin.module(func.func(canonicalize))", &out, &diag);
  fprintf(stdout, "pipeline: success %d\n", mlirLogicalResultIsSuccess(r));
  fprintf(stdout, "%s\n", out.data ? out.data : "(null)");
  if (diag.data)
    fprintf(stdout, "pipeline: diagnostics: %s\n", diag.data);
  uqBufferFree(&out);
  uqBufferFree(&diag);

  r = uqRunPipeline(kModule, strlen(kModule), "builtin.module(no-such-pass)",
                    &out, &diag);
  fprintf(stdout, "bad pipeline: success %d, output %s\n",
          mlirLogicalResultIsSuccess(r), out.data ? "set" : "empty");
  fprintf(stdout, "bad pipeline: diagnostics: %s\n",
          diag.data ? diag.data : "(null)");
  uqBufferFree(&out);
  uqBufferFree(&diag);
  return 0;
}

/* uqCompile: stop at the linalg stage; then the error paths. */
static int testCompile(void) {
  UqBuffer out, json, diag;
  MlirLogicalResult r = uqCompile(kModule, strlen(kModule), NULL, "linalg", 0,
                                  &out, &json, &diag);
  fprintf(stdout, "compile linalg: success %d, kernels json %zu bytes\n",
          mlirLogicalResultIsSuccess(r), json.length);
  fprintf(stdout, "%s\n", out.data ? out.data : "(null)");
  if (diag.data)
    fprintf(stdout, "compile linalg: diagnostics: %s\n", diag.data);
  uqBufferFree(&out);
  uqBufferFree(&json);
  uqBufferFree(&diag);

  r = uqCompile(kBadModule, strlen(kBadModule), "gfx950", "linalg", 256, &out,
                &json, &diag);
  fprintf(stdout, "compile bad ir: success %d, output %s\n",
          mlirLogicalResultIsSuccess(r), out.data ? "set" : "empty");
  fprintf(stdout, "compile bad ir: diagnostics: %s\n",
          diag.data ? diag.data : "(null)");
  uqBufferFree(&out);
  uqBufferFree(&json);
  uqBufferFree(&diag);

  r = uqCompile(kModule, strlen(kModule), NULL, "ptx", 0, &out, NULL, &diag);
  fprintf(stdout, "compile bad stage: success %d\n",
          mlirLogicalResultIsSuccess(r));
  fprintf(stdout, "compile bad stage: diagnostics: %s\n",
          diag.data ? diag.data : "(null)");
  uqBufferFree(&out);
  uqBufferFree(&diag);

  /* Errors that are not the verifier's are located diagnostics too. */
  r = uqCompile(kModule, strlen(kModule), "gfx942", NULL, 0, &out, NULL, &diag);
  fprintf(stdout, "compile bad chip: success %d, output %s\n",
          mlirLogicalResultIsSuccess(r), out.data ? "set" : "empty");
  fprintf(stdout, "compile bad chip: diagnostics: %s\n",
          diag.data ? diag.data : "(null)");
  uqBufferFree(&out);
  uqBufferFree(&diag);

  /* 5000 nested modules: refused before MLIR's recursive parser would
     overflow the stack (docs/robustness.md). */
  {
    const int depth = 5000;
    size_t n = (size_t)depth * 9 + (size_t)depth + 1;
    char *deep = malloc(n);
    size_t at = 0;
    for (int i = 0; i < depth; ++i) {
      memcpy(deep + at, "module { ", 9);
      at += 9;
    }
    for (int i = 0; i < depth; ++i)
      deep[at++] = '}';
    deep[at] = '\0';
    r = uqCompile(deep, at, NULL, "linalg", 0, &out, NULL, &diag);
    fprintf(stdout, "compile deep: success %d\n",
            mlirLogicalResultIsSuccess(r));
    fprintf(stdout, "compile deep: diagnostics: %s\n",
            diag.data ? diag.data : "(null)");
    uqBufferFree(&out);
    uqBufferFree(&diag);
    r = uqRunPipeline(deep, at, "builtin.module(canonicalize)", &out, &diag);
    fprintf(stdout, "pipeline deep: success %d\n",
            mlirLogicalResultIsSuccess(r));
    fprintf(stdout, "pipeline deep: diagnostics: %s\n",
            diag.data ? diag.data : "(null)");
    uqBufferFree(&out);
    uqBufferFree(&diag);
    free(deep);
  }

  /* NULL out parameters are allowed. */
  r = uqCompile(kBadModule, strlen(kBadModule), NULL, NULL, 0, NULL, NULL,
                NULL);
  fprintf(stdout, "compile bad ir, no buffers: success %d\n",
          mlirLogicalResultIsSuccess(r));
  return 0;
}

int main(void) {
  if (testParse())
    return 1;
  testRunPipeline();
  testCompile();
  return 0;
}
