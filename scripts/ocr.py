"""ocr: a part's PDF pages without a usable text layer, read by Tesseract, to OCR rows for extract."""

from tokenmill.extract.ocr_part import main

if __name__ == "__main__":
    main("tesseract", description=__doc__)
