/** The folder of the built panel (`npm run build -w @herald/panel` writes it). */
export declare const panelDistDir: string;
