def convert_fp16(model, keep_io_types=True):
    raise NotImplementedError
