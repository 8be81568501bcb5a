"""Kernels of 70 array arguments (test_many_arguments.py, scripts/gpu_cases/many_args.py):
`many` sums c_k * A_k[i]**2 (c_k = k % 7 + 1) over A0..A69, `d_many` differentiates it
in a kernel, `mixed` alternates arrays and float scalars (every argument a new type run)."""

import diffgpu as dg


@dg.kernel
def many(A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17, A18,
        A19, A20, A21, A22, A23, A24, A25, A26, A27, A28, A29, A30, A31, A32, A33, A34, A35,
        A36, A37, A38, A39, A40, A41, A42, A43, A44, A45, A46, A47, A48, A49, A50, A51, A52,
        A53, A54, A55, A56, A57, A58, A59, A60, A61, A62, A63, A64, A65, A66, A67, A68, A69, out):
    i = dg.global_id()
    out[i] = (1.0 * A0[i] * A0[i] + 2.0 * A1[i] * A1[i] + 3.0 * A2[i] * A2[i] + 4.0 * A3[i] *
            A3[i] + 5.0 * A4[i] * A4[i] + 6.0 * A5[i] * A5[i] + 7.0 * A6[i] * A6[i] + 1.0 *
            A7[i] * A7[i] + 2.0 * A8[i] * A8[i] + 3.0 * A9[i] * A9[i] + 4.0 * A10[i] *
            A10[i] + 5.0 * A11[i] * A11[i] + 6.0 * A12[i] * A12[i] + 7.0 * A13[i] * A13[i] +
            1.0 * A14[i] * A14[i] + 2.0 * A15[i] * A15[i] + 3.0 * A16[i] * A16[i] + 4.0 *
            A17[i] * A17[i] + 5.0 * A18[i] * A18[i] + 6.0 * A19[i] * A19[i] + 7.0 * A20[i] *
            A20[i] + 1.0 * A21[i] * A21[i] + 2.0 * A22[i] * A22[i] + 3.0 * A23[i] * A23[i] +
            4.0 * A24[i] * A24[i] + 5.0 * A25[i] * A25[i] + 6.0 * A26[i] * A26[i] + 7.0 *
            A27[i] * A27[i] + 1.0 * A28[i] * A28[i] + 2.0 * A29[i] * A29[i] + 3.0 * A30[i] *
            A30[i] + 4.0 * A31[i] * A31[i] + 5.0 * A32[i] * A32[i] + 6.0 * A33[i] * A33[i] +
            7.0 * A34[i] * A34[i] + 1.0 * A35[i] * A35[i] + 2.0 * A36[i] * A36[i] + 3.0 *
            A37[i] * A37[i] + 4.0 * A38[i] * A38[i] + 5.0 * A39[i] * A39[i] + 6.0 * A40[i] *
            A40[i] + 7.0 * A41[i] * A41[i] + 1.0 * A42[i] * A42[i] + 2.0 * A43[i] * A43[i] +
            3.0 * A44[i] * A44[i] + 4.0 * A45[i] * A45[i] + 5.0 * A46[i] * A46[i] + 6.0 *
            A47[i] * A47[i] + 7.0 * A48[i] * A48[i] + 1.0 * A49[i] * A49[i] + 2.0 * A50[i] *
            A50[i] + 3.0 * A51[i] * A51[i] + 4.0 * A52[i] * A52[i] + 5.0 * A53[i] * A53[i] +
            6.0 * A54[i] * A54[i] + 7.0 * A55[i] * A55[i] + 1.0 * A56[i] * A56[i] + 2.0 *
            A57[i] * A57[i] + 3.0 * A58[i] * A58[i] + 4.0 * A59[i] * A59[i] + 5.0 * A60[i] *
            A60[i] + 6.0 * A61[i] * A61[i] + 7.0 * A62[i] * A62[i] + 1.0 * A63[i] * A63[i] +
            2.0 * A64[i] * A64[i] + 3.0 * A65[i] * A65[i] + 4.0 * A66[i] * A66[i] + 5.0 *
            A67[i] * A67[i] + 6.0 * A68[i] * A68[i] + 7.0 * A69[i] * A69[i])


@dg.kernel
def d_many(A0, dA0, A1, dA1, A2, dA2, A3, dA3, A4, dA4, A5, dA5, A6, dA6, A7, dA7, A8, dA8, A9,
        dA9, A10, dA10, A11, dA11, A12, dA12, A13, dA13, A14, dA14, A15, dA15, A16, dA16, A17,
        dA17, A18, dA18, A19, dA19, A20, dA20, A21, dA21, A22, dA22, A23, dA23, A24, dA24, A25,
        dA25, A26, dA26, A27, dA27, A28, dA28, A29, dA29, A30, dA30, A31, dA31, A32, dA32, A33,
        dA33, A34, dA34, A35, dA35, A36, dA36, A37, dA37, A38, dA38, A39, dA39, A40, dA40, A41,
        dA41, A42, dA42, A43, dA43, A44, dA44, A45, dA45, A46, dA46, A47, dA47, A48, dA48, A49,
        dA49, A50, dA50, A51, dA51, A52, dA52, A53, dA53, A54, dA54, A55, dA55, A56, dA56, A57,
        dA57, A58, dA58, A59, dA59, A60, dA60, A61, dA61, A62, dA62, A63, dA63, A64, dA64, A65,
        dA65, A66, dA66, A67, dA67, A68, dA68, A69, dA69, out, dout):
    dg.autodiff(many, dg.Duplicated(A0, dA0), dg.Duplicated(A1, dA1),
            dg.Duplicated(A2, dA2), dg.Duplicated(A3, dA3), dg.Duplicated(A4, dA4),
            dg.Duplicated(A5, dA5), dg.Duplicated(A6, dA6), dg.Duplicated(A7, dA7),
            dg.Duplicated(A8, dA8), dg.Duplicated(A9, dA9), dg.Duplicated(A10, dA10),
            dg.Duplicated(A11, dA11), dg.Duplicated(A12, dA12), dg.Duplicated(A13, dA13),
            dg.Duplicated(A14, dA14), dg.Duplicated(A15, dA15), dg.Duplicated(A16, dA16),
            dg.Duplicated(A17, dA17), dg.Duplicated(A18, dA18), dg.Duplicated(A19, dA19),
            dg.Duplicated(A20, dA20), dg.Duplicated(A21, dA21), dg.Duplicated(A22, dA22),
            dg.Duplicated(A23, dA23), dg.Duplicated(A24, dA24), dg.Duplicated(A25, dA25),
            dg.Duplicated(A26, dA26), dg.Duplicated(A27, dA27), dg.Duplicated(A28, dA28),
            dg.Duplicated(A29, dA29), dg.Duplicated(A30, dA30), dg.Duplicated(A31, dA31),
            dg.Duplicated(A32, dA32), dg.Duplicated(A33, dA33), dg.Duplicated(A34, dA34),
            dg.Duplicated(A35, dA35), dg.Duplicated(A36, dA36), dg.Duplicated(A37, dA37),
            dg.Duplicated(A38, dA38), dg.Duplicated(A39, dA39), dg.Duplicated(A40, dA40),
            dg.Duplicated(A41, dA41), dg.Duplicated(A42, dA42), dg.Duplicated(A43, dA43),
            dg.Duplicated(A44, dA44), dg.Duplicated(A45, dA45), dg.Duplicated(A46, dA46),
            dg.Duplicated(A47, dA47), dg.Duplicated(A48, dA48), dg.Duplicated(A49, dA49),
            dg.Duplicated(A50, dA50), dg.Duplicated(A51, dA51), dg.Duplicated(A52, dA52),
            dg.Duplicated(A53, dA53), dg.Duplicated(A54, dA54), dg.Duplicated(A55, dA55),
            dg.Duplicated(A56, dA56), dg.Duplicated(A57, dA57), dg.Duplicated(A58, dA58),
            dg.Duplicated(A59, dA59), dg.Duplicated(A60, dA60), dg.Duplicated(A61, dA61),
            dg.Duplicated(A62, dA62), dg.Duplicated(A63, dA63), dg.Duplicated(A64, dA64),
            dg.Duplicated(A65, dA65), dg.Duplicated(A66, dA66), dg.Duplicated(A67, dA67),
            dg.Duplicated(A68, dA68), dg.Duplicated(A69, dA69), dg.Duplicated(out, dout))


@dg.kernel
def mixed(A0, s0, A1, s1, A2, s2, A3, s3, A4, s4, A5, s5, A6, s6, A7, s7, A8, s8, A9, s9, A10,
        s10, A11, s11, A12, s12, A13, s13, A14, s14, A15, s15, A16, s16, A17, s17, A18, s18,
        A19, s19, A20, s20, A21, s21, A22, s22, A23, s23, A24, s24, A25, s25, A26, s26, A27,
        s27, A28, s28, A29, s29, A30, s30, A31, s31, A32, s32, A33, s33, A34, s34, out):
    i = dg.global_id()
    out[i] = (s0 * A0[i] + s1 * A1[i] + s2 * A2[i] + s3 * A3[i] + s4 * A4[i] + s5 * A5[i] + s6
            * A6[i] + s7 * A7[i] + s8 * A8[i] + s9 * A9[i] + s10 * A10[i] + s11 * A11[i] +
            s12 * A12[i] + s13 * A13[i] + s14 * A14[i] + s15 * A15[i] + s16 * A16[i] + s17 *
            A17[i] + s18 * A18[i] + s19 * A19[i] + s20 * A20[i] + s21 * A21[i] + s22 *
            A22[i] + s23 * A23[i] + s24 * A24[i] + s25 * A25[i] + s26 * A26[i] + s27 *
            A27[i] + s28 * A28[i] + s29 * A29[i] + s30 * A30[i] + s31 * A31[i] + s32 *
            A32[i] + s33 * A33[i] + s34 * A34[i])
