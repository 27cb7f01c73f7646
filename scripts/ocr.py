"""ocr: a part's PDF pages without a usable text layer, read by Tesseract, to OCR rows for extract."""

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.extract.ocr_part import main

if __name__ == "__main__":
    main("tesseract", description=__doc__)
